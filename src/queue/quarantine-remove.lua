--[[
  Removes an entry from the quarantine (quarantine.ts), and its body's bytes from the total kept.
  KEYS[1] the index; KEYS[2] the entry; KEYS[3] the bytes of the bodies kept; ARGV[1] the id.
  Returns 1 when the entry was there, else 0.
]]
local size = tonumber(redis.call('HGET', KEYS[2], 'size') or '0')
local removed = redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[1], ARGV[1])
if size > 0 and removed == 1 then redis.call('DECRBY', KEYS[3], size) end
if redis.call('ZCARD', KEYS[1]) == 0 then redis.call('DEL', KEYS[3]) end
return removed
