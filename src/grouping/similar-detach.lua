--[[
  An operator takes a delivery out of its group (similar-groups.ts): it becomes a group of its
  own, which its routing, run again, keeps (the join finds it joined). The old group keeps its
  first delivery and every other member; nothing is deleted but the delivery's membership.
  KEYS[1] the `of` hash, KEYS[2] the groups zset, KEYS[3] the stream.
  ARGV: 1 key base, 2 delivery key, 3 its own group id (the id of the group it starts when it
  joins none), 4 ttl ms.
  Returns 'detached', 'alone' (in a group of its own already) or 'not-found'.
]]
local of, groups, docs = KEYS[1], KEYS[2], KEYS[3]
local base, key, own, ttl = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])

local value = redis.call('HGET', of, key)
if not value or string.sub(value, 1, 8) == 'pending:' then return 'not-found' end
local stored = cjson.decode(value)
local old = base .. 'group:' .. stored.g
if stored.g == own .. '.d' or (stored.g == own and redis.call('ZCARD', old) <= 1) then
  return 'alone'
end
-- The first of a group that others joined leaves its id to them.
local new = own
if stored.g == own then new = own .. '.d' end

redis.call('ZREM', old, key)
if redis.call('ZCARD', old) == 0 then redis.call('ZREM', groups, stored.g) end
local members = base .. 'group:' .. new
redis.call('ZADD', members, stored.t, key)
redis.call('PEXPIRE', members, ttl)
local last = redis.call('ZSCORE', groups, new)
if not last or tonumber(last) < stored.t then redis.call('ZADD', groups, stored.t, new) end

local recordId = ''
local entry = redis.call('XRANGE', docs, stored.e, stored.e)
if entry[1] then
  local fields = entry[1][2]
  for i = 1, #fields, 2 do
    if fields[i] == 'r' then recordId = fields[i + 1] end
  end
end
stored.g = new
stored.s = 1
stored.f = { key, recordId }
stored.c = {}
redis.call('HSET', of, key, cjson.encode(stored))
return 'detached'
