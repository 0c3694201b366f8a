// TALLY_CLIENTS (100) streaming clients at once, each a greedy completion: every one must
// complete, and each text must equal what the same request gives when it runs alone. The
// clients send 10 distinct requests (prompt, length, ignore_eos), so the solo runs are 10.
import { check, client, collect, model, run } from './common.mjs';

const starts = ['Once upon a time', 'The little dog', 'Lily wanted', 'One day, Tom',
                'The sun was', 'A big red ball', 'Mom said', 'In the park'];

const kDistinct = 10;

function request(i) {
  i %= kDistinct;
  return {
    model,
    prompt: `${starts[i % starts.length]}${i % 3 === 0 ? ' and' : ''}`,
    max_tokens: 12 + (i % 5) * 8,  // different lengths: requests leave the batch at different steps
    temperature: 0,
    ignore_eos: i % 2 === 0,
    stream: true,
  };
}

run(async () => {
  const n = Number(process.env.TALLY_CLIENTS ?? 100);
  const openai = client();
  const t0 = Date.now();
  const solo = [];
  for (let i = 0; i < kDistinct; i += 1) {
    solo.push((await collect(await openai.completions.create(request(i)))).text);
  }
  const t1 = Date.now();
  const together = await Promise.all(Array.from({ length: n }, async (_, i) =>
    collect(await client().completions.create(request(i)))));
  const t2 = Date.now();
  const mismatches = [];
  together.forEach((r, i) => {
    check(r.finish === 'stop' || r.finish === 'length', `client ${i} finished (${r.finish})`);
    if (r.text !== solo[i % kDistinct]) mismatches.push({ i, solo: solo[i % kDistinct], concurrent: r.text });
  });
  check(mismatches.length === 0, `${mismatches.length} of ${n} outputs differ: ` +
        JSON.stringify(mismatches.slice(0, 3)));
  return { clients: n, solo_ms: t1 - t0, concurrent_ms: t2 - t1,
           chars: together.reduce((s, r) => s + r.text.length, 0) };
});
