// llama.cpp's tokenization of texts with the vocabulary of GGUF files (node-llama-cpp's
// prebuilt CPU libraries, vocabulary only: no weights are read), for
// tests/e2e/llamacpp_arch: tally's tokenizer is compared with these ids.
//
// Usage: node tokenize_reference.mjs JOB.json OUT.json
// JOB: {models: [{path, texts: [string]}]}
// OUT: {llama_cpp: {repo, release}, models: [{path, error?, plain: [[id]], special: [[id]]}]}
// `plain`: no BOS/EOS, special-token texts as plain text; `special`: no BOS/EOS, special-token
// texts parsed as the tokens.
import fs from "node:fs";
import path from "node:path";
import {fileURLToPath} from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const {getLlama, LlamaLogLevel} = await import(
  path.join(here, "node_modules/node-llama-cpp/dist/index.js"));

const [jobPath, outPath] = process.argv.slice(2);
if (!jobPath || !outPath) {
  console.error("usage: node tokenize_reference.mjs JOB.json OUT.json");
  process.exit(2);
}
const job = JSON.parse(fs.readFileSync(jobPath, "utf8"));
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error,
                              progressLogs: false});
const result = {llama_cpp: llama.llamaCppRelease, models: []};
for (const m of job.models) {
  const entry = {path: m.path};
  let model = null;
  try {
    model = await llama.loadModel({modelPath: m.path, vocabOnly: true});
    entry.plain = m.texts.map((t) => model.tokenize(t, false));
    entry.special = m.texts.map((t) => model.tokenize(t, true));
  } catch (e) {
    entry.error = String(e?.message ?? e);
  } finally {
    await model?.dispose();
  }
  result.models.push(entry);
}
fs.writeFileSync(outPath, JSON.stringify(result));
await llama.dispose();
