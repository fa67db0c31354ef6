--[[
  A delivery enters its project's stream (similar-grouping.ts), once.
  KEYS[1] the stream, KEYS[2] the `of` hash, KEYS[3] the groups zset, KEYS[4] the active projects (a
  sorted set: project -> last entry ms, trimmed past the ttl, so it is bounded by age).
  ARGV: 1 key base, 2 delivery key, 3 record id, 4 title, 5 compact document, 6 oldest entry id
  kept (MINID), 7 most entries kept, 8 ttl ms, 9 project, 10 most entries dropped per call, 11
  the key as the entry keeps it: '' when it is made of the record id (keyOfRecord).
  Returns { 'joined', stored } for a delivery already grouped (a routing that runs again),
  { 'entered', entry id, dropped by count, dropped by age, the oldest entry id kept } otherwise; a delivery that entered
  before without joining (a crash in between) keeps its entry.
  Before adding, the oldest entries past the age or the count are dropped, each with its place
  in the hash and its group, so that nothing outlives its entry.
]]
local docs, of, groups, projects = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local base, key = ARGV[1], ARGV[2]
local minId, keep, ttl = ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8])

local current = redis.call('HGET', of, key)
if current and string.sub(current, 1, 8) ~= 'pending:' then
  return { 'joined', current }
end

local function older(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as < bs)
end

local byCount, byAge = 0, 0
if not current then
  local length = redis.call('XLEN', docs)
  local oldest = redis.call('XRANGE', docs, '-', '+', 'COUNT', tonumber(ARGV[10]))
  for _, entry in ipairs(oldest) do
    local id, fields = entry[1], entry[2]
    local tooOld = older(id, minId)
    local tooMany = length >= keep
    if not tooOld and not tooMany then break end
    if tooOld then byAge = byAge + 1 else byCount = byCount + 1 end
    local entryKey, recordId
    for i = 1, #fields, 2 do
      if fields[i] == 'k' then entryKey = fields[i + 1] end
      if fields[i] == 'r' then recordId = fields[i + 1] end
    end
    if entryKey == '' and recordId then entryKey = 'feedback.created:' .. recordId end
    if entryKey then
      local value = redis.call('HGET', of, entryKey)
      if value and string.sub(value, 1, 8) ~= 'pending:' then
        -- The stored grouping (stored-grouping.ts): its entry id, then its group.
        local e, g = string.match(value, '^([^|]*)|([^|]*)|')
        if e == id then
          redis.call('HDEL', of, entryKey)
          local members = base .. 'group:' .. g
          redis.call('ZREM', members, entryKey)
          if redis.call('ZCARD', members) == 0 then redis.call('ZREM', groups, g) end
        end
      elseif value == 'pending:' .. id then
        redis.call('HDEL', of, entryKey)
      end
    end
    redis.call('XDEL', docs, id)
    length = length - 1
  end
end

local id
if current then
  id = string.sub(current, 9)
else
  id = redis.call('XADD', docs, '*', 'k', ARGV[11], 'r', ARGV[3], 't', ARGV[4], 'd', ARGV[5])
  redis.call('HSET', of, key, 'pending:' .. id)
end
redis.call('PEXPIRE', docs, ttl)
redis.call('PEXPIRE', of, ttl)
-- The project is active now (the clock of ARGV 6 plus the ttl); those idle past the ttl go.
local minMs = string.match(minId, '^(-?%d+)')
redis.call('ZADD', projects, tonumber(minMs) + ttl, ARGV[9])
redis.call('ZREMRANGEBYSCORE', projects, '-inf', '(' .. minMs)
redis.call('PEXPIRE', projects, ttl)
local oldest = redis.call('XRANGE', docs, '-', '+', 'COUNT', 1)[1][1]
return { 'entered', id, byCount, byAge, oldest }
