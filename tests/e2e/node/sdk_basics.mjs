// The openai SDK against tally serve: models, completions and chat, non-streamed and streamed,
// greedy outputs that repeat and agree between the two.
import { check, checkEqual, client, collect, model, run } from './common.mjs';

run(async () => {
  const openai = client();

  const models = await openai.models.list();
  check(models.data.some((m) => m.id === model), `models.list() lists ${model}`);
  checkEqual((await openai.models.retrieve(model)).id, model, 'models.retrieve()');

  const params = { model, prompt: 'Once upon a time', max_tokens: 24, temperature: 0 };
  const completion = await openai.completions.create(params);
  check(completion.object === 'text_completion', 'completion object');
  const text = completion.choices[0].text;
  check(text.length > 0, 'completion text is not empty');
  check(['stop', 'length'].includes(completion.choices[0].finish_reason), 'finish_reason');
  checkEqual(completion.usage.total_tokens,
             completion.usage.prompt_tokens + completion.usage.completion_tokens, 'usage');
  checkEqual((await openai.completions.create(params)).choices[0].text, text, 'greedy repeats');

  const streamed = await collect(await openai.completions.create({
    ...params, stream: true, stream_options: { include_usage: true } }));
  checkEqual(streamed.text, text, 'streamed completion equals the non-streamed one');
  checkEqual(streamed.finish, completion.choices[0].finish_reason, 'streamed finish_reason');
  checkEqual(streamed.usage, completion.usage, 'streamed usage');

  const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];
  const chat = await openai.chat.completions.create({ model, messages, max_tokens: 24, temperature: 0 });
  check(chat.object === 'chat.completion', 'chat object');
  checkEqual(chat.choices[0].message.role, 'assistant', 'chat role');
  const chatText = chat.choices[0].message.content;
  check(typeof chatText === 'string' && chatText.length > 0, 'chat content');
  const chatStreamed = await collect(await openai.chat.completions.create({
    model, messages, max_tokens: 24, temperature: 0, stream: true }));
  checkEqual(chatStreamed.text, chatText, 'streamed chat equals the non-streamed one');

  const several = await openai.completions.create({ ...params, n: 3, max_tokens: 8 });
  checkEqual(several.choices.map((c) => c.index), [0, 1, 2], 'n = 3 choices');
  const lp = await openai.completions.create({ ...params, max_tokens: 4, logprobs: 2 });
  checkEqual(lp.choices[0].logprobs.tokens.length, 4, 'one logprob entry per token');

  return { completion_text: text, chat_text: chatText, usage: completion.usage };
});
