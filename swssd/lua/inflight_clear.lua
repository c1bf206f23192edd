-- swssd's own script: remove finished batches from a daemon's in-flight record, and compact it,
-- touching only batches that are still the ones the daemon handed over (a Redis that lost its
-- data numbers a new record from 1 again: a late removal must not hit the new record's batches).
-- KEYS: the in-flight record
-- ARGV: n, then n pairs (batch number, SHA1 of the batch as the record keeps it) to remove;
--       optionally (batch number, its SHA1, snapshot): the batch replaced by the snapshot.
-- Reply: {batches removed, 1 when the snapshot was stored else 0}
local record = KEYS[1]
local n = tonumber(ARGV[1])
local removed = 0
for i = 0, n - 1 do
   local field = ARGV[2 + 2 * i]
   local value = redis.call('HGET', record, field)
   if value and redis.sha1hex(value) == ARGV[3 + 2 * i] then
      redis.call('HDEL', record, field)
      removed = removed + 1
   end
end
local stored = 0
local at = 2 + 2 * n
if ARGV[at] then
   local value = redis.call('HGET', record, ARGV[at])
   -- already the snapshot: this call was sent again after a dropped connection
   if value and (value == ARGV[at + 2] or redis.sha1hex(value) == ARGV[at + 1]) then
      redis.call('HSET', record, ARGV[at], ARGV[at + 2])
      stored = 1
   end
end
return {removed, stored}
