// A streaming client that goes away after its first chunks: the server must abort the
// request (request_success_total{finished_reason="abort"} counts it) and the engine must
// give every KV block back (kv_cache_free_blocks returns to kv_cache_total_blocks).
import { check, client, model, run } from './common.mjs';

const prefix = process.env.TALLY_METRICS_PREFIX ?? 'tally:';

async function metrics() {
  const headers = process.env.TALLY_KEY ? { Authorization: `Bearer ${process.env.TALLY_KEY}` } : {};
  const res = await fetch(`${process.env.TALLY_URL}/metrics`, { headers });
  check(res.ok, `/metrics answers 200 (got ${res.status})`);
  const text = await res.text();
  const value = (name, labels = '') => {
    const line = text.split('\n').find((l) => l.startsWith(prefix + name) && l.includes(labels) &&
                                              !l.startsWith('#'));
    return line === undefined ? NaN : Number(line.split(' ').pop());
  };
  return {
    free: value('kv_cache_free_blocks'),
    total: value('kv_cache_total_blocks'),
    running: value('num_requests_running'),
    aborted: value('request_success_total', 'finished_reason="abort"'),
    generated: value('generation_tokens_total'),
  };
}

run(async () => {
  const before = await metrics();
  check(before.free === before.total, `all blocks free before (${before.free}/${before.total})`);
  const maxTokens = Number(process.env.TALLY_MAX_TOKENS ?? 400);
  const n = 4;
  const stream = await client().completions.create({
    model, prompt: 'Once upon a time', max_tokens: maxTokens, n, ignore_eos: true,
    temperature: 0, stream: true });
  let chunks = 0;
  for await (const chunk of stream) {
    chunks += chunk.choices.length;
    if (chunks >= 2) break;  // leaving the loop aborts the HTTP request: the socket closes
  }
  const t0 = Date.now();
  let after = await metrics();
  while ((after.free !== after.total || after.running !== 0 || !(after.aborted >= 1)) &&
         Date.now() - t0 < 5000) {
    await new Promise((r) => setTimeout(r, 10));
    after = await metrics();
  }
  check(after.aborted >= 1, `the request was aborted (request_success_total abort = ${after.aborted})`);
  check(after.free === after.total, `blocks freed: ${after.free}/${after.total} free`);
  check(after.running === 0, `nothing running (${after.running})`);
  const generated = after.generated - (before.generated || 0);
  check(generated < maxTokens * n, `generation stopped early (${generated} of ${maxTokens * n} tokens)`);
  return { freed_after_ms: Date.now() - t0, generated, max: maxTokens * n, ...after };
});
