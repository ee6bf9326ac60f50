/**
 * The decisions of the Redis store as Lua scripts (docs/architecture.md §2 "The counters store"):
 * each runs atomically on the Redis node of one key, so every decision about a key is one
 * script call, exact across any number of policy replicas. A key's state lives under one hash
 * tag (`tintype:{k:<keyId>}:…`, keyPrefix()), so in Redis Cluster one script touches one slot:
 *
 * - `s`  hash: `ws` start of the burst window, `wc` calls in it, `if` render places held.
 * - `m:<YYYY-MM>` string: the month's calls, metered plus reservations in flight; seeded from
 *   PostgreSQL's tallies when absent (store.ts), expires MONTH_KEEP_MS after it was made.
 * - `l`  hash: open leases, lease id ▸ JSON {op, r (render 0/1), m (month), c (checked at), x (expires), cl (claimed 0/1)}.
 * - `e`  sorted set: open leases by expiry.
 * - `c`  hash: closed leases, lease id ▸ the UsageRecord JSON of the close without its lease and
 *   key ids, which the field and the prefix give ('' when nothing was recorded), kept
 *   REDIS_CLOSED_LEASE_MEMORY_MS (store.ts) so a repeated settle answers `already` and appends
 *   its ledger event again; `ce` sorted set: closed leases by close time, for forgetting them.
 *
 * Keys a script builds from the prefix share the tag of the key it is given, so they are on the
 * same node. The ledger stream and the expiry schedule are single keys of their own (another
 * slot): their commands go in the same pipeline, never inside a key's script.
 */

/**
 * Whether Redis's clock has passed the caller's deadline (epoch ms): the caller gave up on this
 * call (503 busy), so a decision that reached Redis late must change nothing. Redis has no
 * statement timeout of its own; this is the counterpart of PostgreSQL's (postgres.ts PG_TIMEOUTS).
 */
const LATE = `
local function late(deadline)
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > tonumber(deadline)
end
`;

/** Forgets closed leases older than the memory; shared by settle and expire. */
const FORGET = `
local function forget(p, before)
  local old = redis.call('ZRANGEBYSCORE', p .. 'ce', '-inf', before, 'LIMIT', 0, 50)
  for _, id in ipairs(old) do
    redis.call('HDEL', p .. 'c', id)
    redis.call('ZREM', p .. 'ce', id)
  end
end
`;

/** The ledger event of a closed lease: the record kept at its close ('' for none) with its lease and key ids put back. */
const EVENT = `
local function event(kept, key, id)
  if kept == '' then return '' end
  return '{"leaseId":' .. cjson.encode(id) .. ',"keyId":' .. cjson.encode(key) .. ',' .. string.sub(kept, 2)
end
`;

/**
 * Closes one open lease: frees its place, returns its reservation unless metered, remembers it
 * closed, and answers its UsageRecord JSON ('' when not recorded).
 */
const CLOSE = EVENT + `
local function close(p, key, id, L, status, err, cache, metered, recorded, outcome, now, memory)
  redis.call('HDEL', p .. 'l', id)
  redis.call('ZREM', p .. 'e', id)
  if L.r == 1 then redis.call('HINCRBY', p .. 's', 'if', -1) end
  if not metered then
    local mk = p .. 'm:' .. L.m
    if redis.call('EXISTS', mk) == 1 then redis.call('DECR', mk) end
  end
  local kept = ''
  if recorded then
    kept = cjson.encode({ operation = L.op, month = L.m, status = status, error = err, cache = cache,
      metered = metered, outcome = outcome, checkedAt = L.c, recordedAt = now })
  end
  redis.call('HSET', p .. 'c', id, kept)
  redis.call('ZADD', p .. 'ce', now, id)
  redis.call('PEXPIRE', p .. 'c', memory)
  redis.call('PEXPIRE', p .. 'ce', memory)
  return event(kept, key, id)
end
`;

/**
 * KEYS[1] the key's `s` hash. ARGV: prefix, lease id, operation, render (0/1), now, window start,
 * month, expires at, per minute, monthly quota, concurrent renders, seed ('' for none), month keep ms,
 * deadline. Answers {outcome, window count, open leases}; outcome `seed` (nothing written) when
 * the month counter is absent and no seed was given, `late` (nothing written) past the deadline.
 */
export const CHECK_LUA = LATE + `
if late(ARGV[14]) then return { 'late', 0, 0 } end
local p = ARGV[1]
local id, op, render, now, window = ARGV[2], ARGV[3], ARGV[4] == '1', tonumber(ARGV[5]), tonumber(ARGV[6])
local month, expires = ARGV[7], tonumber(ARGV[8])
local perMinute, quota, concurrent = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local mk = p .. 'm:' .. month
local used = redis.call('GET', mk)
if not used then
  if ARGV[12] == '' then return { 'seed', 0, 0 } end
  redis.call('SET', mk, ARGV[12], 'NX', 'PX', ARGV[13])
  used = redis.call('GET', mk)
end
used = tonumber(used)
local s = redis.call('HMGET', KEYS[1], 'ws', 'wc', 'if')
local wc = tonumber(s[2]) or 0
if tonumber(s[1]) ~= window then wc = 0 end
-- A full window refuses without writing, as the other stores do.
if wc >= perMinute then return { 'rate_limited', wc, redis.call('HLEN', p .. 'l') } end
wc = wc + 1
redis.call('HSET', KEYS[1], 'ws', window, 'wc', wc)
if used >= quota then return { 'quota_exceeded', wc, redis.call('HLEN', p .. 'l') } end
if render and (tonumber(s[3]) or 0) >= concurrent then return { 'concurrent_limit', wc, 0 } end
redis.call('INCR', mk)
if render then redis.call('HINCRBY', KEYS[1], 'if', 1) end
redis.call('HSET', p .. 'l', id, cjson.encode({ op = op, r = render and 1 or 0, m = month, c = now, x = expires, cl = 0 }))
redis.call('ZADD', p .. 'e', expires, id)
return { 'granted', wc, 0 }
`;

/** KEYS[1] the key's `s` hash. ARGV: prefix, lease id, operation, claim (1) or release (0), deadline. */
export const CLAIM_LUA = LATE + `
if late(ARGV[5]) then return 'late' end
local p = ARGV[1]
local raw = redis.call('HGET', p .. 'l', ARGV[2])
if not raw then return 'spent' end
local L = cjson.decode(raw)
if L.op ~= ARGV[3] then return 'spent' end
if ARGV[4] == '0' then
  L.cl = 0
  redis.call('HSET', p .. 'l', ARGV[2], cjson.encode(L))
  return 'released'
end
if L.cl == 1 then return 'held' end
L.cl = 1
redis.call('HSET', p .. 'l', ARGV[2], cjson.encode(L))
return 'claimed'
`;

/**
 * KEYS[1] the key's `s` hash. ARGV: prefix, key id, lease id, status ('' for none), error, cache,
 * metered (0/1), recorded (0/1), now, closed-lease memory ms, deadline.
 * Answers {result, UsageRecord JSON or ''}: `already` gives the record kept at the close; `late`
 * changes nothing (the renderer was answered 503 and settles again).
 */
export const SETTLE_LUA = LATE + FORGET + CLOSE + `
if late(ARGV[11]) then return { 'late', '' } end
local p, key, id = ARGV[1], ARGV[2], ARGV[3]
local now, memory = tonumber(ARGV[9]), tonumber(ARGV[10])
forget(p, now - memory)
local raw = redis.call('HGET', p .. 'l', id)
if not raw then
  local kept = redis.call('HGET', p .. 'c', id)
  if kept then return { 'already', event(kept, key, id) } end
  return { 'unknown', '' }
end
local status = cjson.null
if ARGV[4] ~= '' then status = tonumber(ARGV[4]) end
local err, cache = cjson.null, cjson.null
if ARGV[5] ~= '' then err = ARGV[5] end
if ARGV[6] ~= '' then cache = ARGV[6] end
local recorded = ARGV[8] == '1'
local ev = close(p, key, id, cjson.decode(raw), status, err, cache, recorded and ARGV[7] == '1', recorded, 'settled', now, memory)
return { 'settled', ev }
`;

/**
 * KEYS[1] the key's `s` hash. ARGV: prefix, key id, now, closed-lease memory ms. Expires the
 * key's leases due by now (at most 200) as unsettled; answers {next expiry or '', record JSON…}.
 */
export const EXPIRE_LUA = FORGET + CLOSE + `
local p, key, now, memory = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
forget(p, now - memory)
local due = redis.call('ZRANGEBYSCORE', p .. 'e', '-inf', now, 'LIMIT', 0, 200)
local out = { '' }
for _, id in ipairs(due) do
  local raw = redis.call('HGET', p .. 'l', id)
  if raw then
    table.insert(out, close(p, key, id, cjson.decode(raw), cjson.null, cjson.null, cjson.null, false, true, 'unsettled', now, memory))
  else
    redis.call('ZREM', p .. 'e', id)
  end
end
local next = redis.call('ZRANGE', p .. 'e', 0, 0, 'WITHSCORES')
if next[2] then out[1] = next[2] end
return out
`;

/**
 * KEYS[1] the expiry schedule (key id ▸ when to sweep it next). After a check, ARGV: key id,
 * expires at, now. An absent entry is made, a later one brought earlier; one due already (a sweep
 * may be reading it) is moved to now + 0.5 ms, a time no sweep read, so that sweep's
 * rescheduling sees it moved and keeps it for the next round.
 */
export const SCHEDULE_LUA = `
local s = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
local at, now = tonumber(ARGV[2]), tonumber(ARGV[3])
if not s then redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
elseif s <= now then redis.call('ZADD', KEYS[1], string.format('%.1f', now + 0.5), ARGV[1])
elseif at < s then redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1]) end
return 1
`;

/**
 * KEYS[1] the expiry schedule. After a key's sweep, ARGV: key id, the entry's time the sweep read,
 * its next expiry ('' for none). Unmoved since the read: set to the next expiry, or removed; moved
 * by a check meanwhile: only brought earlier.
 */
export const RESCHEDULE_LUA = `
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s then s = nil else s = tonumber(s) end
local read = tonumber(ARGV[2])
if s == read then
  if ARGV[3] == '' then redis.call('ZREM', KEYS[1], ARGV[1]) else redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1]) end
elseif s and ARGV[3] ~= '' and tonumber(ARGV[3]) < s then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
end
return 1
`;
