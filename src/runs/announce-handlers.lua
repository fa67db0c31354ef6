-- A worker writes its handlers to the roster (handler-roster.ts), in one step so that no other
-- worker's write lands between what this one reads and what it writes.
-- KEYS[1]: the roster, one entry per handler name (what the console, bulk actions and the
--   queues' list read, and what workers of the previous release read and write).
-- KEYS[2]: the running workers, one entry per worker: its handlers, until when it counts.
-- ARGV: now (ms), how long this worker counts after this write (ms), how long a previous
--   release's worker counts after its write (ms), the roster's ttl (s), worker id, the worker's
--   entry, then pairs of handler name and its roster entry.
local now = tonumber(ARGV[1])
local runningFor = tonumber(ARGV[2])
local previousRunningFor = tonumber(ARGV[3])

-- A worker that stopped (or died) counts until its entry's `until`; then its entry goes.
local workers = redis.call('HGETALL', KEYS[2])
for i = 1, #workers, 2 do
  local ok, entry = pcall(cjson.decode, workers[i + 1])
  if not ok or type(entry) ~= 'table' or type(entry['until']) ~= 'number' or entry['until'] <= now then
    redis.call('HDEL', KEYS[2], workers[i])
  end
end
redis.call('HSET', KEYS[2], ARGV[5], ARGV[6])
if redis.call('PTTL', KEYS[2]) < runningFor then
  redis.call('PEXPIRE', KEYS[2], runningFor)
end

-- A name's entry written lately by a worker of the previous release (no `worker` in it) is how
-- that worker says its windows: left as it is while that worker runs, as readers count it.
for i = 7, #ARGV, 2 do
  local current = redis.call('HGET', KEYS[1], ARGV[i])
  local held = false
  if current then
    local ok, entry = pcall(cjson.decode, current)
    held = ok and type(entry) == 'table' and entry['worker'] == nil
      and type(entry['at']) == 'number' and now - entry['at'] < previousRunningFor
  end
  if not held then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
redis.call('EXPIRE', KEYS[1], ARGV[4])
