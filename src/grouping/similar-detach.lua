--[[
  An operator takes a delivery out of its group (similar-groups.ts): it becomes a group of its
  own, which its routing, run again, keeps (the join finds it joined). The old group keeps its id
  and every other member; nothing is deleted but the delivery's membership. When the delivery is
  the group's first, the group's first is from then on its earliest member left: no line is
  written again, the join and the readers see that the first's line names another group
  (similar-join.lua `firstNow`, group-first.ts). That holds for a group of its own that others
  joined since (a first detached before, say): it leaves that group to them too.
  A group of one keeps no members key and is not in the project's groups (similar-join.lua): the
  new group has neither.
  Each detach is logged in the project's detaches stream, which the workers' indexes read with
  their catch-up (similar-enter.lua): their next routings choose by the groups as they are now.
  KEYS[1] the `of` hash, KEYS[2] the groups zset, KEYS[3] the stream, KEYS[4] the detaches.
  ARGV: 1 key base, 2 delivery key, 3 ttl ms, 4 oldest entry id kept (MINID).
  Returns 'detached', 'alone' (in a group of its own already) or 'not-found'.
]]
local of, groups, docs, detaches = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local base, key, ttl, minId = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]

local value, where = lineOf(of, key)
if not value or string.sub(value, 1, 8) == 'pending:' then return 'not-found' end
-- The stored grouping (stored-grouping.ts).
local entryField, groupField, _, t, _, m = string.match(value, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|')
local e, g = idsOfLine(entryField, groupField)
-- Its own groups' ids: its entry id; after a detach that left that id to the others, the entry
-- id and .d; after another, .d2, .d3, ... (a delivery moves only when detached: each is new).
-- `times` is how many of them it has left, nil when it is in another delivery's group.
local own = e
local old = base .. 'group:' .. g
local times = nil
if g == own then
  times = 0
elseif string.sub(g, 1, #own + 2) == own .. '.d' then
  times = tonumber(string.sub(g, #own + 3)) or 1
end
-- In one of its own with no members key, or none but itself: a group of one.
if times and redis.call('ZCARD', old) <= 1 then return 'alone' end
-- The first of a group that others joined leaves its id to them.
local new = own
if times then new = own .. '.d' .. (times == 0 and '' or times + 1) end

redis.call('ZREM', old, where)
if redis.call('ZCARD', old) == 0 then redis.call('ZREM', groups, g) end
-- Its new group is of one: no members key, and not in the project's groups (similar-join.lua).
-- Its arrival stays as stored (stored-grouping.ts).
local recordId = ''
local entry = redis.call('XRANGE', docs, e, e)
if entry[1] then
  local fields = entry[1][2]
  for i = 1, #fields, 2 do
    if fields[i] == 'r' then recordId = fields[i + 1] end
  end
end
local firstKey = key
if key == 'feedback.created:' .. recordId then firstKey = '' end
local first = string.len(recordId) .. ':' .. recordId .. firstKey
local newEntryField, newGroupField = lineIdFields(e, new)
redis.call('HSET', of, where, table.concat({ newEntryField, newGroupField, '1', t, '', m, first }, '|'))
-- Kept as long as a delivery is: a detach older than that is of an entry no longer kept.
redis.call('XADD', detaches, 'MINID', '~', minId, '*', 'e', e, 'g', new)
redis.call('PEXPIRE', detaches, ttl)
return 'detached'
