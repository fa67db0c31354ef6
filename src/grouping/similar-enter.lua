--[[
  A batch of one project's deliveries enters its stream (similar-grouping.ts), in order, each
  once; and the worker's catch-up is read in the same round trip.
  KEYS[1] the stream, KEYS[2] the `of` hash (lines by their field: fieldOf in line-fields.lua), KEYS[3] the groups zset, KEYS[4] the active projects (a
  sorted set: project -> last entry ms, trimmed past the ttl, so it is bounded by age), KEYS[5]
  the operator's detaches (similar-detach.lua).
  ARGV: 1 key base, 2 oldest entry id kept (MINID), 3 most entries kept, 4 ttl ms, 5 project,
  6 most entries dropped per delivery, 7 the last entry id the worker read ('' for none), 8 most
  entries (and detaches) read back, 9 the last detach the worker read ('' for none); then per
  delivery, four: its key, record id, compact document, and its key as the entry keeps it (''
  when it is made of the record id, keyOfRecord). An entry keeps no title (the delivery history
  has it); one written before this version has a 't'.
  Returns { results, read, detaches }:
  - per delivery, { 'joined', stored } for one already grouped (a routing that runs again), or
    { 'entered', entry id, dropped by count, dropped by age, the oldest entry id kept after it };
    a delivery that entered before without joining (a crash in between) keeps its entry;
  - the entries after the last one read up to the batch's newest, at most ARGV[8], each
    { id, fields, its stored grouping ('' for none yet) }: the worker's index catches up with them;
    an entry this call added is { id } alone: the worker has its fields, and it has no grouping;
  - the detaches after the last one read, at most ARGV[8], each { id, { 'e', entry id, 'g', group } }:
    the worker's index moves each entry it holds to its new group.
  Before a delivery is added, the oldest entries past the age or the count are dropped, each with
  its place in the hash and its group, so that nothing outlives its entry.
]]
local docs, of, groups, projects, detaches = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local base, minId, keep, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local project, mostDropped, lastRead, mostRead = ARGV[5], tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8])
local lastDetach = ARGV[9]

local function older(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as < bs)
end

local function keyOf(fields)
  local entryKey, recordId
  for i = 1, #fields, 2 do
    if fields[i] == 'k' then entryKey = fields[i + 1] end
    if fields[i] == 'r' then recordId = fields[i + 1] end
  end
  if entryKey == '' and recordId then entryKey = 'feedback.created:' .. recordId end
  return entryKey
end

local function dropOldest()
  local byCount, byAge = 0, 0
  local length = redis.call('XLEN', docs)
  if length == 0 then return byCount, byAge end
  -- Nothing due (the usual case below the count): the oldest entry alone says so, without
  -- reading a hundred entries for each delivery of a batch.
  local head = redis.call('XRANGE', docs, '-', '+', 'COUNT', 1)[1][1]
  if length < keep and not older(head, minId) then return byCount, byAge end
  local oldest = redis.call('XRANGE', docs, '-', '+', 'COUNT', mostDropped)
  for _, entry in ipairs(oldest) do
    local id, fields = entry[1], entry[2]
    local tooOld = older(id, minId)
    local tooMany = length >= keep
    if not tooOld and not tooMany then break end
    if tooOld then byAge = byAge + 1 else byCount = byCount + 1 end
    local entryKey = keyOf(fields)
    if entryKey then
      local value, where = lineOf(of, entryKey)
      if value and string.sub(value, 1, 8) ~= 'pending:' then
        -- The stored grouping (stored-grouping.ts): its entry id, then its group.
        local e, g = idsOfLine(string.match(value, '^([^|]*)|([^|]*)|'))
        if e == id then
          redis.call('HDEL', of, where)
          local members = base .. 'group:' .. g
          redis.call('ZREM', members, where)
          -- No members key: a group of one (similar-join.lua), this delivery; it goes with it.
          if redis.call('ZCARD', members) == 0 then redis.call('ZREM', groups, g) end
        end
      elseif value == 'pending:' .. id then
        redis.call('HDEL', of, where)
      end
    end
    redis.call('XDEL', docs, id)
    length = length - 1
  end
  return byCount, byAge
end

local results, newest = {}, nil
-- The entries this call adds: the catch-up returns their ids alone (the worker sent their fields).
local added = {}
for at = 10, #ARGV, 4 do
  local key = ARGV[at]
  local current, where = lineOf(of, key)
  if current and string.sub(current, 1, 8) ~= 'pending:' then
    results[#results + 1] = { 'joined', current }
  else
    local id
    local byCount, byAge = 0, 0
    local field = fieldOf(key)
    if current then
      id = string.sub(current, 9)
      -- Entered before this version and not joined: its line moves to its field, where the
      -- join looks.
      if where ~= field then
        redis.call('HDEL', of, where)
        redis.call('HSET', of, field, current)
      end
    else
      byCount, byAge = dropOldest()
      id = redis.call('XADD', docs, '*', 'k', ARGV[at + 3], 'r', ARGV[at + 1], 'd', ARGV[at + 2])
      added[id] = true
      redis.call('HSET', of, field, 'pending:' .. id)
    end
    if not newest or older(newest, id) then newest = id end
    local oldest = redis.call('XRANGE', docs, '-', '+', 'COUNT', 1)[1][1]
    results[#results + 1] = { 'entered', id, byCount, byAge, oldest }
  end
end
redis.call('PEXPIRE', docs, ttl)
redis.call('PEXPIRE', of, ttl)
-- The project is active now (the clock of ARGV 2 plus the ttl); those idle past the ttl go.
local minMs = string.match(minId, '^(-?%d+)')
redis.call('ZADD', projects, tonumber(minMs) + ttl, project)
redis.call('ZREMRANGEBYSCORE', projects, '-inf', '(' .. minMs)
redis.call('PEXPIRE', projects, ttl)

-- The catch-up: what the worker has not read yet, up to the batch's newest entry, with each
-- entry's stored grouping, so the worker needs no XRANGE and HMGET of its own.
local read = {}
if newest and (lastRead == '' or older(lastRead, newest)) then
  local start = lastRead == '' and '-' or '(' .. lastRead
  for _, entry in ipairs(redis.call('XRANGE', docs, start, newest, 'COUNT', mostRead)) do
    if added[entry[1]] then
      read[#read + 1] = { entry[1] }
    else
      local entryKey = keyOf(entry[2])
      local stored = entryKey and lineOf(of, entryKey)
      read[#read + 1] = { entry[1], entry[2], stored or '' }
    end
  end
end
-- The detaches the worker has not read: read with the entries' lines, so both say the same.
local start = lastDetach == '' and '-' or '(' .. lastDetach
return { results, read, redis.call('XRANGE', detaches, start, '+', 'COUNT', mostRead) }
