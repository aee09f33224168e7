// check.mjs - prove tests/helpers/mock_llm.py speaks the real wire formats by
// running the official SDKs (@anthropic-ai/sdk, openai) against it.
//
//   node tests/sdk/check.mjs http://127.0.0.1:PORT      (or MOCK_URL=...)
//
// Starts nothing: the mock must already run. Loads its own script through
// POST /_mock/script?replace=1, then runs each case in order and prints TAP
// ("ok N - ...", "not ok N - ..."). Exit 0 if all pass, 1 otherwise, 2 on a
// usage error. Never talks to anything but the given loopback URL.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { createHash } from 'node:crypto';
import assert from 'node:assert/strict';

const base = (process.argv[2] || process.env.MOCK_URL || '').replace(/\/+$/, '');
if (!/^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?$/.test(base)) {
  console.error('usage: node check.mjs http://127.0.0.1:PORT  (loopback mock only)');
  process.exit(2);
}
const KEY = 'canary';

const weather = { location: 'San Francisco, CA', units: 'f', note: 'quote " and back\\slash, é ✓' };
const files = { path: 'src/main.c', lines: [1, 2, 3] };
const vecs = [[0.5, -0.25, 1, 0], [0.125, 0, -1, 0.75]];

// One step per SDK request below, in order.
const steps = [
  // Anthropic
  { provider: 'anthropic', text: 'Hello from the mock.', usage: { input_tokens: 12, output_tokens: 6 } },
  { provider: 'anthropic', text: "I'll check the weather.", tool_calls: [{ id: 'toolu_01StreamCall', name: 'get_weather', input: weather }], usage: { input_tokens: 30, output_tokens: 40 } },
  { provider: 'anthropic', text: 'raw events, ünïcödé ✓', chunk: 3 },
  { provider: 'anthropic', tool_calls: [{ id: 'toolu_01PlainCall', name: 'list_files', input: files }] },
  { provider: 'anthropic', fault: 'rate_limit', retry_after: '1' },
  { provider: 'anthropic', text: 'after the retry' },
  { provider: 'anthropic', fault: 'overloaded' },
  { provider: 'anthropic', fault: 'auth' },
  { provider: 'anthropic', fault: 'cut', text: 'this stream is cut in the middle of it', cut_after: 5 },
  { provider: 'anthropic', fault: 'stream_error', text: 'partial answer then error' },
  // OpenAI
  { provider: 'openai', text: 'Hello from the OpenAI mock.', usage: { input_tokens: 19, output_tokens: 10, cache_read_input_tokens: 4 } },
  { provider: 'openai', text: 'Calling two tools.', tool_calls: [{ id: 'call_stream0', name: 'get_weather', input: weather }, { id: 'call_stream1', name: 'list_files', input: files }], chunk: 5 },
  { provider: 'openai', tool_calls: [{ id: 'call_plain0', name: 'get_weather', input: weather }] },
  { path: '/v1/embeddings', embeddings: vecs },
  { provider: 'openai', fault: 'rate_limit', retry_after: '1' },
  { provider: 'openai', text: 'after the retry' },
  { provider: 'openai', fault: 'context_length' },
  { provider: 'openai', fault: 'auth' },
  { provider: 'openai', fault: 'cut', text: 'this stream is cut in the middle of it', cut_after: 4 },
];

let n = 0;
let failed = 0;
async function test(name, fn) {
  n++;
  try {
    await fn();
    console.log(`ok ${n} - ${name}`);
  } catch (e) {
    failed++;
    console.log(`not ok ${n} - ${name}`);
    for (const line of String(e && e.stack ? e.stack : e).split('\n').slice(0, 12)) console.log(`# ${line}`);
  }
}

async function mockGet(path) {
  const r = await fetch(base + path);
  assert.equal(r.status, 200);
  return r.json();
}

async function expectThrow(fn, check) {
  let err = null;
  try {
    await fn();
  } catch (e) {
    err = e;
  }
  assert.ok(err, 'expected an error');
  check(err);
}

const anth = new Anthropic({ apiKey: KEY, baseURL: base, maxRetries: 0, timeout: 10000 });
const anthRetry = new Anthropic({ apiKey: KEY, baseURL: base, maxRetries: 2, timeout: 10000 });
const oai = new OpenAI({ apiKey: KEY, baseURL: base + '/v1', maxRetries: 0, timeout: 10000 });
const oaiRetry = new OpenAI({ apiKey: KEY, baseURL: base + '/v1', maxRetries: 2, timeout: 10000 });
const model = 'claude-haiku-4-5';
const omodel = 'gpt-4o-mini';
const user = [{ role: 'user', content: 'What is the weather in SF?' }];
const tools = [{
  name: 'get_weather', description: 'Weather for a city',
  input_schema: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
}];
const otools = [{
  type: 'function',
  function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } },
}];

let startSeq = 0;
await test('load the SDK script into the mock', async () => {
  const r = await fetch(base + '/_mock/script?replace=1', {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(steps),
  });
  assert.equal(r.status, 200);
  assert.equal((await r.json()).remaining, steps.length);
  const reqs = await mockGet('/_mock/requests');
  startSeq = reqs.length ? reqs[reqs.length - 1].seq : 0;
});

// ---- Anthropic ----------------------------------------------------------

await test('anthropic: messages.create (plain text)', async () => {
  const { data: msg, response } = await anth.messages.create({ model, max_tokens: 100, messages: user }).withResponse();
  assert.equal(msg.type, 'message');
  assert.equal(msg.role, 'assistant');
  assert.equal(msg.model, model);
  assert.equal(msg.content.length, 1);
  assert.equal(msg.content[0].type, 'text');
  assert.equal(msg.content[0].text, 'Hello from the mock.');
  assert.equal(msg.stop_reason, 'end_turn');
  assert.equal(msg.stop_sequence, null);
  assert.equal(msg.usage.input_tokens, 12);
  assert.equal(msg.usage.output_tokens, 6);
  assert.match(msg.id, /^msg_01/);
  assert.match(response.headers.get('request-id'), /^req_/);
  assert.match(msg._request_id, /^req_/);
  assert.equal(response.headers.get('anthropic-ratelimit-requests-limit'), '50');
});

await test('anthropic: messages.stream + finalMessage (text + tool_use, input_json_delta)', async () => {
  const stream = anth.messages.stream({ model, max_tokens: 100, messages: user, tools });
  let text = '';
  let jsonSnapshots = 0;
  stream.on('text', (t) => { text += t; });
  stream.on('inputJson', () => { jsonSnapshots++; });
  const msg = await stream.finalMessage();
  assert.equal(text, "I'll check the weather.");
  assert.ok(jsonSnapshots >= 3, `input_json_delta split in several chunks (${jsonSnapshots})`);
  assert.equal(msg.content.length, 2);
  assert.equal(msg.content[0].text, "I'll check the weather.");
  assert.equal(msg.content[1].type, 'tool_use');
  assert.equal(msg.content[1].id, 'toolu_01StreamCall');
  assert.equal(msg.content[1].name, 'get_weather');
  assert.deepEqual(msg.content[1].input, weather);
  assert.equal(msg.stop_reason, 'tool_use');
  assert.equal(msg.usage.input_tokens, 30);
  assert.equal(msg.usage.output_tokens, 40);
});

await test('anthropic: create({stream:true}) raw events in order, ping included', async () => {
  const stream = await anth.messages.create({ model, max_tokens: 100, messages: user, stream: true });
  const types = [];
  let text = '';
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
  }
  assert.equal(text, 'raw events, ünïcödé ✓');
  assert.equal(types[0], 'message_start');
  assert.equal(types[1], 'content_block_start');
  assert.equal(types.at(-2), 'message_delta');
  assert.equal(types.at(-1), 'message_stop');
  assert.ok(types.filter((t) => t === 'content_block_delta').length >= 5);
});

await test('anthropic: messages.create tool_use answer', async () => {
  const msg = await anth.messages.create({ model, max_tokens: 100, messages: user, tools });
  assert.equal(msg.stop_reason, 'tool_use');
  assert.equal(msg.content.length, 1);
  assert.deepEqual(msg.content[0], { type: 'tool_use', id: 'toolu_01PlainCall', name: 'list_files', input: files });
});

await test('anthropic: 429 with retry-after is retried by the SDK, then succeeds', async () => {
  const t0 = Date.now();
  const msg = await anthRetry.messages.create({ model, max_tokens: 100, messages: user });
  const dt = Date.now() - t0;
  assert.equal(msg.content[0].text, 'after the retry');
  assert.ok(dt >= 900, `honoured retry-after: 1 (waited ${dt} ms)`);
});

await test('anthropic: 529 overloaded_error -> APIError 529 with the error body', async () => {
  await expectThrow(() => anth.messages.create({ model, max_tokens: 100, messages: user }), (e) => {
    assert.ok(e instanceof Anthropic.APIError, String(e));
    assert.equal(e.status, 529);
    assert.equal(e.error.type, 'error');
    assert.equal(e.error.error.type, 'overloaded_error');
    assert.match(e.requestID, /^req_/);
  });
});

await test('anthropic: 401 -> AuthenticationError', async () => {
  await expectThrow(() => anth.messages.create({ model, max_tokens: 100, messages: user }), (e) => {
    assert.ok(e instanceof Anthropic.AuthenticationError, String(e));
    assert.equal(e.error.error.type, 'authentication_error');
  });
});

await test('anthropic: stream cut mid-way makes the SDK fail (no silent success)', async () => {
  await expectThrow(() => anth.messages.stream({ model, max_tokens: 100, messages: user }).finalMessage(), (e) => {
    assert.ok(e instanceof Error, String(e));
  });
});

await test('anthropic: mid-stream "event: error" -> APIError overloaded_error', async () => {
  await expectThrow(() => anth.messages.stream({ model, max_tokens: 100, messages: user }).finalMessage(), (e) => {
    assert.ok(e instanceof Anthropic.APIError, String(e));
    assert.match(JSON.stringify(e.error), /overloaded_error/);
  });
});

// ---- OpenAI --------------------------------------------------------------

await test('openai: chat.completions.create (plain text)', async () => {
  const { data: c, response } = await oai.chat.completions.create({ model: omodel, messages: user }).withResponse();
  assert.equal(c.object, 'chat.completion');
  assert.equal(c.model, omodel);
  assert.equal(c.choices[0].message.role, 'assistant');
  assert.equal(c.choices[0].message.content, 'Hello from the OpenAI mock.');
  assert.equal(c.choices[0].finish_reason, 'stop');
  assert.equal(c.usage.prompt_tokens, 23);
  assert.equal(c.usage.completion_tokens, 10);
  assert.equal(c.usage.total_tokens, 33);
  assert.equal(c.usage.prompt_tokens_details.cached_tokens, 4);
  assert.match(c.id, /^chatcmpl-/);
  assert.match(c._request_id, /^req_/);
  assert.equal(response.headers.get('openai-version'), '2020-10-01');
  assert.equal(response.headers.get('x-ratelimit-reset-tokens'), '6m0s');
});

await test('openai: chat.completions.stream + finalChatCompletion (text + 2 tool-call deltas, usage)', async () => {
  const stream = oai.chat.completions.stream({
    model: omodel, messages: user, tools: otools, stream_options: { include_usage: true },
  });
  let content = '';
  const argDeltas = [0, 0];
  stream.on('content.delta', ({ delta }) => { content += delta; });
  stream.on('tool_calls.function.arguments.delta', ({ index }) => { argDeltas[index]++; });
  const c = await stream.finalChatCompletion();
  assert.equal(content, 'Calling two tools.');
  assert.ok(argDeltas[0] >= 3 && argDeltas[1] >= 3, `arguments split across chunks (${argDeltas})`);
  const m = c.choices[0].message;
  assert.equal(m.content, 'Calling two tools.');
  assert.equal(c.choices[0].finish_reason, 'tool_calls');
  assert.equal(m.tool_calls.length, 2);
  assert.equal(m.tool_calls[0].id, 'call_stream0');
  assert.equal(m.tool_calls[0].type, 'function');
  assert.equal(m.tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(m.tool_calls[0].function.arguments), weather);
  assert.equal(m.tool_calls[1].id, 'call_stream1');
  assert.deepEqual(JSON.parse(m.tool_calls[1].function.arguments), files);
  assert.ok(c.usage && c.usage.total_tokens > 0, 'usage chunk (stream_options.include_usage)');
});

await test('openai: chat.completions.create tool-call answer', async () => {
  const c = await oai.chat.completions.create({ model: omodel, messages: user, tools: otools });
  const m = c.choices[0].message;
  assert.equal(c.choices[0].finish_reason, 'tool_calls');
  assert.equal(m.content, null);
  assert.equal(m.tool_calls.length, 1);
  assert.equal(m.tool_calls[0].id, 'call_plain0');
  assert.equal(m.tool_calls[0].function.name, 'get_weather');
  assert.equal(typeof m.tool_calls[0].function.arguments, 'string');
  assert.deepEqual(JSON.parse(m.tool_calls[0].function.arguments), weather);
});

await test('openai: embeddings.create (SDK default base64 encoding decoded)', async () => {
  const e = await oai.embeddings.create({ model: 'text-embedding-3-small', input: ['alpha', 'beta'] });
  assert.equal(e.object, 'list');
  assert.equal(e.data.length, 2);
  assert.deepEqual(e.data.map((d) => Array.from(d.embedding)), vecs);
  assert.deepEqual(e.data.map((d) => d.index), [0, 1]);
  assert.ok(e.usage.prompt_tokens > 0);
});

await test('openai: embeddings.create float, default vectors (no step needed)', async () => {
  const e = await oai.embeddings.create({ model: 'text-embedding-3-small', input: 'hello world', encoding_format: 'float', dimensions: 16 });
  assert.equal(e.data[0].embedding.length, 16);
  const norm = Math.sqrt(e.data[0].embedding.reduce((s, v) => s + v * v, 0));
  assert.ok(Math.abs(norm - 1) < 1e-6, `unit vector (${norm})`);
});

await test('openai: 429 with retry-after is retried by the SDK, then succeeds', async () => {
  const t0 = Date.now();
  const c = await oaiRetry.chat.completions.create({ model: omodel, messages: user });
  const dt = Date.now() - t0;
  assert.equal(c.choices[0].message.content, 'after the retry');
  assert.ok(dt >= 900, `honoured retry-after: 1 (waited ${dt} ms)`);
});

await test('openai: 400 context_length_exceeded -> BadRequestError with code/param/type', async () => {
  await expectThrow(() => oai.chat.completions.create({ model: omodel, messages: user }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError, String(e));
    assert.equal(e.status, 400);
    assert.equal(e.code, 'context_length_exceeded');
    assert.equal(e.type, 'invalid_request_error');
    assert.match(e.requestID, /^req_/);
  });
});

await test('openai: 401 -> AuthenticationError invalid_api_key', async () => {
  await expectThrow(() => oai.chat.completions.create({ model: omodel, messages: user }), (e) => {
    assert.ok(e instanceof OpenAI.AuthenticationError, String(e));
    assert.equal(e.code, 'invalid_api_key');
  });
});

await test('openai: stream cut mid-way makes the SDK fail (no [DONE])', async () => {
  await expectThrow(() => oai.chat.completions.stream({ model: omodel, messages: user }).finalChatCompletion(), (e) => {
    assert.ok(e instanceof Error, String(e));
  });
});

// ---- what the mock saw -----------------------------------------------------

await test('mock log: every SDK request sent the key (sha256), retries counted', async () => {
  const reqs = (await mockGet('/_mock/requests')).filter((r) => r.seq > startSeq);
  const sha = createHash('sha256').update(KEY).digest('hex');
  assert.equal(reqs.length, steps.length + 1, 'one request per step, plus the embeddings without a step');
  for (const r of reqs) {
    assert.equal(r.auth, 'present');
    assert.equal(r.auth_sha256, sha);
    assert.ok(!JSON.stringify(r).includes(KEY), 'raw key never logged');
  }
  const anthReqs = reqs.filter((r) => r.provider === 'anthropic');
  // (@anthropic-ai/sdk 1.x sends anthropic-version 2026-10-21 and the key as
  // Authorization: Bearer; 0.x sent 2023-06-01 and x-api-key. The mock takes both.)
  assert.ok(anthReqs.every((r) => /^\d{4}-\d\d-\d\d$/.test(r.headers['anthropic-version'] || '')));
  const retried = reqs.filter((r) => r.headers['x-stainless-retry-count'] === '1');
  assert.equal(retried.length, 2, 'one retry per SDK');
  const s = await mockGet('/_mock/script');
  assert.equal(s.remaining, 0);
});

console.log(`1..${n}`);
if (failed) console.log(`# ${failed} of ${n} failed`);
process.exit(failed ? 1 : 0);
