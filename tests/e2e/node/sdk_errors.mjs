// Errors as the openai SDK sees them: the right APIError subclass, status, message and param,
// and the server still answering afterwards. TALLY_EXPECT_AUTH=1: the server was started with
// an API key that TALLY_KEY does not hold.
import OpenAI from 'openai';
import { check, checkEqual, client, model, run } from './common.mjs';

async function expectError(promise, status, needle, param) {
  try {
    await promise;
  } catch (error) {
    check(error instanceof OpenAI.APIError, `an APIError, got ${error}`);
    checkEqual(error.status, status, `status for '${needle}'`);
    check(error.message.includes(needle), `message '${error.message}' mentions '${needle}'`);
    if (param !== undefined) checkEqual(error.param, param, `param for '${needle}'`);
    return error.constructor.name;
  }
  throw new Error(`check failed: expected a ${status} error mentioning '${needle}'`);
}

run(async () => {
  const openai = client();
  if (process.env.TALLY_EXPECT_AUTH === '1') {
    const kind = await expectError(openai.models.list(), 401, 'API key');
    checkEqual(kind, 'AuthenticationError', 'a 401 is an AuthenticationError');
    return { auth: kind };
  }
  const kinds = {};
  const base = { model, prompt: 'Once' };
  kinds.negative = await expectError(openai.completions.create({ ...base, max_tokens: -3 }),
                                     400, 'max_tokens', 'max_tokens');
  kinds.absurd = await expectError(openai.completions.create({ ...base, max_tokens: 1e12 }),
                                   400, 'max_tokens', 'max_tokens');
  kinds.context = await expectError(openai.completions.create({ ...base, max_tokens: 5000 }),
                                    400, 'maximum context length', 'max_tokens');
  kinds.type = await expectError(openai.completions.create({ ...base, temperature: 'hot' }),
                                 400, 'temperature', 'temperature');
  kinds.model = await expectError(openai.completions.create({ ...base, model: 'gpt-9' }),
                                  404, 'gpt-9', 'model');
  kinds.chat = await expectError(openai.chat.completions.create({ model, messages: [] }),
                                 400, 'messages', 'messages');
  kinds.stream = await expectError(
      openai.completions.create({ ...base, stream: true, top_p: 7 }), 400, 'top_p', 'top_p');
  checkEqual(kinds.model, 'NotFoundError', 'a 404 is a NotFoundError');
  checkEqual(kinds.negative, 'BadRequestError', 'a 400 is a BadRequestError');
  const after = await openai.completions.create({ ...base, max_tokens: 2, temperature: 0 });
  checkEqual(after.choices.length, 1, 'the server still answers');
  return kinds;
});
