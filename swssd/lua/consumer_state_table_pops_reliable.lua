-- swssd's daemon variant of consumer_state_table_pops.lua: the same changes to Redis for every
-- entry it delivers (reported as the tracked variant does: {key, fieldvalues, delete pending}),
-- with less work per key for Redis, plus what a daemon needs so that no popped change is lost:
-- * the same table hashes, written with fewer commands: a key whose table entry does not exist
--   gets its state hash renamed into place (RENAMENX: the same fields and values, in the same
--   order, as HSET of what HGETALL read, and the state hash is gone as DEL leaves it); an existing
--   entry gets every field in one HSET (the same hash as the C++ script's HSET per field); the
--   other state hashes are deleted by one DEL per batch; the delete set is looked at per key only
--   when it is not empty (SREM of an empty set changes nothing). What differs is only what
--   keyspace notifications say: rename_from/rename_to, one hset instead of one per field;
-- * the delivered batch is added to the in-flight hash KEYS[4] under a new sequence number (from
--   HINCRBY of its field 'seq'), in this same call, so a crashed daemon or a lost reply loses nothing;
--   the reply carries the same JSON text (Redis encodes the batch once, not twice);
-- * a wrong-type staging hash or table entry costs that entry, not the batch: it is set aside
--   (a JSON record on the dead-letter list KEYS[5], capped at ARGV[3]) and the rest is delivered;
-- * a wrong-type key set or delete set is refused before anything is popped.
-- KEYS: key set, 'TABLE<sep>', delete set, in-flight hash, dead-letter list
-- ARGV: pop batch size, state prefix, dead-letter list cap, excerpt bytes
-- Reply: {seq, more, entries, set aside}: seq of this batch (the counter when nothing was
-- delivered), 1 when the key set holds more, the entries as JSON text (an empty array when none
-- were delivered), the records set aside.
redis.replicate_commands()
local expected = {{KEYS[1], 'set'}, {KEYS[3], 'set'}, {KEYS[4], 'hash'}, {KEYS[5], 'list'}}
for _, e in ipairs(expected) do
   local t = redis.call('TYPE', e[1])['ok']
   if t ~= 'none' and t ~= e[2] then
      return redis.error_reply('WRONGTYPE ' .. e[1] .. ' is a ' .. t .. ', not a ' .. e[2])
   end
end
local ret = {}
local dead = {}
local staged = {} -- state hashes read: deleted by one DEL per batch
local tablename = KEYS[2]
local stateprefix = ARGV[2]
local limit = tonumber(ARGV[4])
local function excerpt(key)
   local t = redis.call('TYPE', key)['ok']
   if t == 'string' then
      return t, redis.call('GETRANGE', key, 0, limit - 1)
   end
   return t, ''
end
local function flat_excerpt(fieldvalues)
   return string.sub(table.concat(fieldvalues, ' '), 1, limit)
end
local keys = redis.call('SPOP', KEYS[1], ARGV[1])
-- pcall, here and for RENAMENX: a command an ACL refuses falls back to what the C++ script does,
-- rather than failing the script after SPOP took the keys
local pending = redis.pcall('SCARD', KEYS[3])
local deletes = type(pending) ~= 'number' or pending > 0
for i = 1, #keys do
   local key = keys[i]
   local num = 0
   if deletes then
      num = redis.call('SREM', KEYS[3], key)
      if num == 1 then
         redis.call('DEL', tablename..key)
      end
   end
   local staging = stateprefix..tablename..key
   local fieldvalues = redis.pcall('HGETALL', staging)
   if fieldvalues['err'] then
      local t, value = excerpt(staging)
      table.insert(dead, cjson.encode({key = key, op = 'SET', value = value,
         reason = staging .. ' is a ' .. t .. ', not a hash'}))
      staged[#staged + 1] = staging
      if num == 1 then
         table.insert(ret, {key, {}, 1})
      end
   elseif #fieldvalues > 0 and redis.pcall('RENAMENX', staging, tablename..key) == 1 then
      table.insert(ret, {key, fieldvalues, num})
   else
      local r = 0
      for j = 1, #fieldvalues, 1000 do -- in chunks: unpack() has a stack limit
         r = redis.pcall('HSET', tablename..key, unpack(fieldvalues, j, math.min(j + 999, #fieldvalues)))
         if type(r) == 'table' then
            break
         end
      end
      if type(r) == 'table' and r['err'] then
         local t = excerpt(tablename..key)
         table.insert(dead, cjson.encode({key = key, op = 'SET', value = flat_excerpt(fieldvalues),
            reason = tablename..key .. ' is a ' .. t .. ', not a hash'}))
      else
         table.insert(ret, {key, fieldvalues, num})
      end
      staged[#staged + 1] = staging
   end
end
for j = 1, #staged, 1000 do -- in chunks: unpack() has a stack limit
   redis.call('DEL', unpack(staged, j, math.min(j + 999, #staged)))
end
local seq
local entries = {}
if #ret > 0 then
   seq = redis.call('HINCRBY', KEYS[4], 'seq', 1)
   entries = cjson.encode(ret)
   redis.call('HSET', KEYS[4], seq, entries)
else
   seq = tonumber(redis.call('HGET', KEYS[4], 'seq') or '0')
end
if #dead > 0 then
   for j = 1, #dead, 1000 do -- in chunks: unpack() has a stack limit (8000 set aside failed the pop)
      redis.call('RPUSH', KEYS[5], unpack(dead, j, math.min(j + 999, #dead)))
   end
   redis.call('LTRIM', KEYS[5], -tonumber(ARGV[3]), -1)
end
local more = 0
if redis.call('SCARD', KEYS[1]) > 0 then
   more = 1
end
return {seq, more, entries, dead}
