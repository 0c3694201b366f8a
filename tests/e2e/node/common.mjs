// Shared by the scripts: the client for the server under test (TALLY_URL, TALLY_KEY,
// TALLY_MODEL from the environment), checks that fail the script with a message, and JSON
// output for the C++ test that runs the script.
import OpenAI from 'openai';

export const baseURL = `${process.env.TALLY_URL}/v1`;
export const model = process.env.TALLY_MODEL ?? 'stories260K';

export function client(options = {}) {
  return new OpenAI({
    baseURL,
    apiKey: process.env.TALLY_KEY ?? 'unused',
    maxRetries: 0,  // a retried 429/503 would hide what the server answered
    timeout: 60_000,
    ...options,
  });
}

export function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

export function checkEqual(actual, expected, message) {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    throw new Error(`check failed: ${message}: got ${JSON.stringify(actual)}, ` +
                    `expected ${JSON.stringify(expected)}`);
  }
}

// Runs main(); prints its result as one JSON line; exit status 1 with the error otherwise.
export async function run(main) {
  try {
    const result = await main();
    process.stdout.write(JSON.stringify(result ?? {}) + '\n');
  } catch (error) {
    process.stderr.write(`${error.stack ?? error}\n`);
    process.exit(1);
  }
}

// The text of a streamed completion or chat completion, and what else the stream said.
export async function collect(stream) {
  let text = '';
  let finish = null;
  let usage = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks += 1;
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      text += choice.text ?? choice.delta?.content ?? '';
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  return { text, finish, usage, chunks };
}
