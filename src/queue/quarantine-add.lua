--[[
  Adds a body to the quarantine (quarantine.ts), or counts it again when it is there already (a
  sender's retry), then trims the quarantine to its bounds, oldest first, as Sidekiq's
  DeadSet#trim does: by age, by count, by the bytes of the bodies kept.

  KEYS[1] the index (a sorted set of ids by when each was last received)
  KEYS[2] the entry (a hash: meta, body, excerpt, size, received)
  KEYS[3] the bytes of the bodies kept
  ARGV[1] the id; ARGV[2] meta (JSON); ARGV[3] the body; ARGV[4] its excerpt, for search
  ARGV[5] when it was received (ms); ARGV[6] most entries; ARGV[7] oldest kept (ms of age)
  ARGV[8] most bytes of bodies; ARGV[9] the entries' key prefix
  Returns { times received, dropped by age, dropped by count, dropped by bytes }.
]]
local index, entry, bytes = KEYS[1], KEYS[2], KEYS[3]
local id, now = ARGV[1], tonumber(ARGV[5])
local most, maxAge, mostBytes = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])

local received
if redis.call('EXISTS', entry) == 1 then
  received = redis.call('HINCRBY', entry, 'received', 1)
else
  received = 1
  local size = string.len(ARGV[3])
  redis.call('HSET', entry, 'meta', ARGV[2], 'body', ARGV[3], 'excerpt', ARGV[4],
    'size', size, 'received', 1)
  redis.call('INCRBY', bytes, size)
end
-- GT: a resend moves the entry to the front, never back (receivers' clocks may differ a little).
redis.call('ZADD', index, 'GT', now, id)

local function drop(victim)
  local key = ARGV[9] .. victim
  local size = tonumber(redis.call('HGET', key, 'size') or '0')
  redis.call('DEL', key)
  redis.call('ZREM', index, victim)
  if size > 0 then redis.call('DECRBY', bytes, size) end
end

local byAge = 0
for _, victim in ipairs(redis.call('ZRANGEBYSCORE', index, '-inf', '(' .. (now - maxAge))) do
  if victim ~= id then
    drop(victim)
    byAge = byAge + 1
  end
end

local byCount = 0
local over = redis.call('ZCARD', index) - most
if over > 0 then
  for _, victim in ipairs(redis.call('ZRANGE', index, 0, over)) do
    if byCount < over and victim ~= id then
      drop(victim)
      byCount = byCount + 1
    end
  end
end

local byBytes = 0
while tonumber(redis.call('GET', bytes) or '0') > mostBytes do
  local oldest = redis.call('ZRANGE', index, 0, 1)
  local victim = oldest[1] == id and oldest[2] or oldest[1]
  if not victim then break end
  drop(victim)
  byBytes = byBytes + 1
end

return { received, byAge, byCount, byBytes }
