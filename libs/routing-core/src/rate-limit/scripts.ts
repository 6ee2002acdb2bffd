import { createHash } from 'crypto';

/**
 * Redis scripts of the shared rate limiter. Every router replica runs them against the same
 * Redis, so limits hold across replicas; each runs as one EVAL, atomically.
 *
 * The algorithm is GCRA (a leaky bucket kept as one timestamp per key, the "theoretical arrival
 * time" TAT): a limit of L per period P spaces units P/L ms apart and tolerates a burst of up to
 * L at once. One key per limit holds its TAT as ms with 3 decimals, expiring when the bucket
 * is full again, so idle keys cost nothing. Chosen over a sliding-window log because it is O(1)
 * in memory and time whatever the limit, and over fixed windows because it has no 2×-at-the-edge
 * bursts; a token cost is just a weight.
 *
 * Time is the Redis server's clock (`TIME`) unless a caller passes one (tests): router
 * replicas' clocks may disagree, Redis is the one clock they share.
 */

/**
 * Checks both limits of a key and model and reserves one request and the estimated tokens, or
 * reserves nothing.
 *
 * KEYS[1] requests TAT key, KEYS[2] tokens TAT key (same hash tag: one cluster slot)
 * ARGV[1] requests per period (0: unlimited)   ARGV[2] tokens per period (0: unlimited)
 * ARGV[3] tokens to reserve (integer ≥ 0)       ARGV[4] period, ms
 * ARGV[5] now, ms since the epoch, or '' for the Redis server's clock
 * Reply: { allowed 1|0, retry_after_ms (0 when allowed; -1: the request can never fit),
 *          limited_by 'requests'|'tokens'|'', remaining_requests, remaining_tokens,
 *          reset_requests_ms, reset_tokens_ms } — remaining and reset are after the
 *          reservation when allowed, as they stand when not; -1 for an unlimited dimension.
 */
export const RATE_LIMIT_CHECK_SCRIPT = `
local period = tonumber(ARGV[4])
local now = tonumber(ARGV[5])
if not now then
  if redis.replicate_commands then redis.replicate_commands() end
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
-- Doubles near 1.7e12 ms resolve about 0.0002 ms; compare with a margin above that.
local EPSILON = 0.001
local names = { 'requests', 'tokens' }
local limits = { tonumber(ARGV[1]), tonumber(ARGV[2]) }
local costs = { 1, tonumber(ARGV[3]) }
local new_tats = {}
local allowed = 1
local retry = 0
local limited_by = ''
local remaining = { -1, -1 }
local reset = { -1, -1 }
for i = 1, 2 do
  local limit = limits[i]
  if limit > 0 then
    local interval = period / limit
    local tat = tonumber(redis.call('GET', KEYS[i])) or now
    if tat < now then tat = now end
    local new_tat = tat + costs[i] * interval
    new_tats[i] = new_tat
    local wait = new_tat - period - now
    if costs[i] > limit then
      allowed = 0
      retry = -1
      limited_by = names[i]
    elseif wait > EPSILON then
      allowed = 0
      if retry ~= -1 and wait > retry then
        retry = wait
        limited_by = names[i]
      end
    end
    remaining[i] = { math.floor((period - (new_tat - now)) / interval + EPSILON), math.floor((period - (tat - now)) / interval + EPSILON) }
    reset[i] = { math.ceil(new_tat - now - EPSILON), math.ceil(tat - now - EPSILON) }
  end
end
local pick = 1
if allowed == 0 then pick = 2 end
for i = 1, 2 do
  if limits[i] > 0 then
    if allowed == 1 then
      local ttl = math.max(1, math.ceil(new_tats[i] - now))
      redis.call('SET', KEYS[i], string.format('%.3f', new_tats[i]), 'PX', ttl)
    end
    remaining[i] = math.max(0, remaining[i][pick])
    reset[i] = math.max(0, reset[i][pick])
  end
end
if retry > 0 then retry = math.ceil(retry) end
return { allowed, retry, limited_by, remaining[1], remaining[2], reset[1], reset[2] }
`;

/**
 * Settles the tokens reserved for a finished request against what it really used: a refund
 * when it used fewer (never below a full bucket), a charge when it used more (the key then waits
 * longer; it cannot be refused retroactively).
 *
 * KEYS[1] tokens TAT key
 * ARGV[1] tokens per period (0: unlimited, nothing to do)   ARGV[2] used − reserved tokens
 * ARGV[3] period, ms   ARGV[4] now, ms since the epoch, or '' for the Redis server's clock
 * Reply: ms until the bucket is full again.
 */
export const RATE_LIMIT_SETTLE_SCRIPT = `
local limit = tonumber(ARGV[1])
local delta = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
if limit <= 0 or delta == 0 then return 0 end
if not now then
  if redis.replicate_commands then redis.replicate_commands() end
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local new_tat = tat + delta * period / limit
if new_tat - now < 0.001 then
  redis.call('DEL', KEYS[1])
  return 0
end
redis.call('SET', KEYS[1], string.format('%.3f', new_tat), 'PX', math.ceil(new_tat - now))
return math.ceil(new_tat - now)
`;

/** For EVALSHA: Redis names a cached script by the SHA-1 of its text. */
export const RATE_LIMIT_CHECK_SHA1 = sha1(RATE_LIMIT_CHECK_SCRIPT);
export const RATE_LIMIT_SETTLE_SHA1 = sha1(RATE_LIMIT_SETTLE_SCRIPT);

function sha1(text: string): string {
  return createHash('sha1').update(text).digest('hex');
}
