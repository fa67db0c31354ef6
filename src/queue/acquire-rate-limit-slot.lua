--[[
  Takes a slot of the API's shared rate limit (api-rate-limiter.ts), a sliding window of the
  requests sent. KEYS[1] the window (a sorted set of slots by time); ARGV[1] the requests a window
  holds; ARGV[2] how long a slot is held, in ms; ARGV[3] the new slot's id.
  Returns 0 when the slot is taken, else how many ms to wait before asking again.
  Redis's own clock, so that processes on machines whose clocks differ still agree.
]]
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000 + math.floor(tonumber(now_parts[2]) / 1000)
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + window - now)
