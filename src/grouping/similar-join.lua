--[[
  A delivery that entered joins its group, once (similar-grouping.ts), and learns which of the
  worker's windows its arrival crossed.
  KEYS[1] the `of` hash, KEYS[2] the groups zset.
  ARGV: 1 key base, 2 delivery key, 3 entry id, 4 arrival ms, 5 ttl ms, 6 the delivery's own
  group id (its entry id: the id of the group it starts when it joins none), 7 itself as a
  group's first (stored-grouping.ts), 8 the best match's key ('' for none above the threshold),
  9 the best match's group and 10 its first as the worker computed them, used when the match has
  not joined yet, 11 matches (as stored), 12 windows (JSON: a list of [atLeast, withinMs]).
  Returns the stored value (stored-grouping.ts): the one already there when the delivery had
  joined before (a routing that runs again, or one an operator detached), so a delivery is in one
  group only and counted once.
]]
local of, groups = KEYS[1], KEYS[2]
local base, key, entry, t, ttl = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])

local current = redis.call('HGET', of, key)
if current and string.sub(current, 1, 8) ~= 'pending:' then return current end

local group, first = ARGV[6], ARGV[7]
if ARGV[8] ~= '' then
  local best = redis.call('HGET', of, ARGV[8])
  if best and string.sub(best, 1, 8) ~= 'pending:' then
    -- Its group (the second field) and its first (the last, after six bars).
    group = string.match(best, '^[^|]*|([^|]*)|')
    first = string.match(best, '^[^|]*|[^|]*|[^|]*|[^|]*|[^|]*|[^|]*|(.*)$')
  else
    group, first = ARGV[9], ARGV[10]
  end
end

local members = base .. 'group:' .. group
redis.call('ZADD', members, t, key)
redis.call('PEXPIRE', members, ttl)
local last = redis.call('ZSCORE', groups, group)
last = last and tonumber(last)
if not last or last < t then redis.call('ZADD', groups, t, group) end
redis.call('PEXPIRE', groups, ttl)

-- Deliveries join out of their arrival order (retries, several workers): a window is counted up
-- to the group's latest arrival, and only the latest arrival may say the group dropped below
-- it, so a late joiner neither fires a crossing again nor takes it away.
local now = t
if last and last > t then now = last end
local crossed = {}
for _, window in ipairs(cjson.decode(ARGV[12])) do
  local atLeast, within = window[1], window[2]
  local count = redis.call('ZCOUNT', members, '(' .. (now - within), now)
  local marker = base .. 'crossed:' .. group .. ':' .. atLeast .. ':' .. within
  if count >= atLeast then
    if redis.call('SET', marker, '1', 'NX', 'PX', within) then
      crossed[#crossed + 1] = string.format('%d:%d', atLeast, within)
    else
      redis.call('PEXPIRE', marker, within)
    end
  elseif t >= now then
    redis.call('DEL', marker)
  end
end

local value = table.concat({
  entry,
  group,
  redis.call('ZCARD', members),
  string.format('%d', t),
  table.concat(crossed, ','),
  ARGV[11],
  first,
}, '|')
redis.call('HSET', of, key, value)
return value
