// llama.cpp's greedy tokens and raw logits for GGUF models, through node-llama-cpp's prebuilt
// CPU libraries (install.sh), for tests/e2e/llamacpp_arch: tally's output is compared with
// these.
//
// Usage: node arch_reference.mjs JOB.json OUT.json
// JOB: {threads, models: [{path, context, prompts: [{text, ids, n_predict}]}]}
// OUT: {llama_cpp: {repo, release}, models: [{path, error?, prompts: [{tokenized, generated,
//       logits}]}]} where, per prompt, `tokenized` is llama.cpp's tokenization of `text` (no
//       BOS, no special parsing), `generated` the n_predict greedy ids after `ids`, and
//       `logits` the raw logits (one array of n_vocab per row) after each of `ids` and each
//       generated id but the last: the distributions the greedy choices were made from.
//
// Greedy here is the argmax of llama.cpp's logits (the lowest id on ties, as tally's), taken
// from the same rows that are returned; it is what llama.cpp's greedy sampler picks. The KV
// cache is f32 and flash attention off, so that llama.cpp's attention is f32 like tally's
// `--kv-type f32`; a model that fails to load is reported in `error`, not thrown.
import fs from "node:fs";
import path from "node:path";
import {fileURLToPath} from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const {getLlama, LlamaLogLevel} = await import(
  path.join(here, "node_modules/node-llama-cpp/dist/index.js"));

const [jobPath, outPath] = process.argv.slice(2);
if (!jobPath || !outPath) {
  console.error("usage: node arch_reference.mjs JOB.json OUT.json");
  process.exit(2);
}
const job = JSON.parse(fs.readFileSync(jobPath, "utf8"));

// build "never": the prebuilt binaries or nothing (no cmake, no download); gpu false: no
// probing for CUDA/Vulkan/Metal.
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error,
                              progressLogs: false});

// The logits map holds every id of the vocabulary (no filter asked for).
function dense(logitMap) {
  const row = new Array(logitMap.size).fill(null);
  for (const [id, v] of logitMap) row[id] = v;
  return row;
}

function argmax(row) {
  let best = 0;
  for (let i = 1; i < row.length; ++i) if (row[i] > row[best]) best = i;
  return best;
}

// One prompt on `seq`, from an empty history.
async function runPrompt(model, seq, prompt) {
  await seq.clearHistory();
  const logits = [];
  const generated = [];
  const withLogits = (t) => [t, {generateNext: {logits: true}}];
  let out = await seq.controlledEvaluate(prompt.ids.map(withLogits));
  for (let i = 0; i < prompt.ids.length; ++i) logits.push(dense(out[i].next.logits));
  for (;;) {
    const next = argmax(logits[logits.length - 1]);
    generated.push(next);
    if (generated.length >= prompt.n_predict) break;
    out = await seq.controlledEvaluate([withLogits(next)]);
    logits.push(dense(out[0].next.logits));
  }
  return {tokenized: model.tokenize(prompt.text, false), generated, logits};
}

const result = {llama_cpp: llama.llamaCppRelease, models: []};
for (const m of job.models) {
  const entry = {path: m.path, prompts: []};
  let model = null;
  let ctx = null;
  try {
    model = await llama.loadModel({modelPath: m.path, gpuLayers: 0});
    ctx = await model.createContext({
      contextSize: m.context, sequences: 1, threads: job.threads,
      flashAttention: false, experimentalKvCacheKeyType: "F32",
      experimentalKvCacheValueType: "F32"});
    const seq = ctx.getSequence();
    for (const p of m.prompts) entry.prompts.push(await runPrompt(model, seq, p));
  } catch (e) {
    entry.error = String(e?.message ?? e);
  } finally {
    await ctx?.dispose();
    await model?.dispose();
  }
  result.models.push(entry);
}
fs.writeFileSync(outPath, JSON.stringify(result));
await llama.dispose();
