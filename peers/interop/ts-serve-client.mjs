// An MCP client written with the official TypeScript SDK v2 (@modelcontextprotocol/client), PINNED to
// protocol revision 2026-07-28 (or, with "pin": false in the plan, in the SDK's default mode, which
// is the handshake era), for the dual-era interop tests of kelson: it runs against `kelson serve` with a
// writable SQLite database, driven by a plan given as JSON:
//
//   node ts-serve-client.mjs PLAN http URL
//   node ts-serve-client.mjs PLAN stdio COMMAND [ARGS...]
//
// PLAN: {"query": SQL, "read": URI, "execute": SQL, "pin": bool (default true)}
//
// Steps: list tools; call list_tables and query; read PLAN.read; call execute with PLAN.execute,
// declining the approval through the elicitation handler (a 2026-07-28 input request), then
// printing {"awaiting":"declined"} and waiting for a line on stdin (the caller checks that nothing
// was written), then again, accepting it.
//
// The last line on stdout is one JSON summary: each step's outcome, `errors`, the SDK's era and
// version, and what went over the wire (every message's method and `_meta` protocol version; on HTTP
// every MCP-Protocol-Version header).

import { createInterface } from 'node:readline';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const VERSION = '2026-07-28';
const PROTOCOL_VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
const STEP_TIMEOUT_MS = 15000;

const [planJson, kind, target, ...rest] = process.argv.slice(2);
if (!planJson || (kind !== 'http' && kind !== 'stdio') || !target) {
    console.error('usage: ts-serve-client.mjs PLAN http URL | PLAN stdio COMMAND [ARGS...]');
    process.exit(2);
}
const plan = JSON.parse(planJson);

const wire = { methods: [], metaVersions: new Set(), headerVersions: new Set() };

function record(message) {
    if (message && typeof message === 'object' && 'method' in message) {
        wire.methods.push(message.method);
        const version = message.params?._meta?.[PROTOCOL_VERSION_KEY];
        if (version !== undefined) wire.metaVersions.add(version);
    }
}

class RecordingStdioTransport extends StdioClientTransport {
    async send(message) {
        record(message);
        return super.send(message);
    }
}

function recordingFetch(input, init) {
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    const version = headers.get('mcp-protocol-version');
    if (version !== null) wire.headerVersions.add(version);
    if (typeof init?.body === 'string') {
        try {
            record(JSON.parse(init.body));
        } catch {
            // not JSON: nothing to record
        }
    }
    return fetch(input, init);
}

function withTimeout(promise, what) {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), STEP_TIMEOUT_MS);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const text = result => (result.content ?? []).filter(b => b.type === 'text').map(b => b.text).join('');

// A tool call's outcome in the shape every client of these tests reports.
async function call(name, args) {
    const result = await client.callTool({ name, arguments: args });
    const structured = result.structuredContent ?? {};
    return {
        isError: result.isError ?? false,
        text: text(result),
        tables: (structured.tables ?? []).map(t => t.name).sort(),
        rows: structured.rows ?? null,
        rowsAffected: structured.rows_affected ?? null
    };
}

const summary = { sdk: '@modelcontextprotocol/client 2.4.0', transport: kind, steps: {}, errors: [] };

async function step(name, run) {
    try {
        summary.steps[name] = await withTimeout(run(), name);
    } catch (e) {
        summary.errors.push(`${name}: ${e?.stack ?? e}`);
    }
}

// The approval questions in the order asked, and the answers given: decline first, then accept.
const asked = [];
const answers = [{ action: 'decline' }, { action: 'accept', content: { approve: true } }];
const options = { capabilities: { elicitation: { form: {} } } };
if (plan.pin !== false) options.versionNegotiation = { mode: { pin: VERSION } };
const client = new Client({ name: 'interop-ts-serve-client', version: '2.4.0' }, options);
client.setRequestHandler('elicitation/create', async request => {
    asked.push({ message: request.params.message, fields: Object.keys(request.params.requestedSchema?.properties ?? {}) });
    return answers[Math.min(asked.length - 1, answers.length - 1)];
});

const transport =
    kind === 'http'
        ? new StreamableHTTPClientTransport(new URL(target), { fetch: recordingFetch })
        : new RecordingStdioTransport({ command: target, args: rest, env: { ...process.env }, stderr: 'inherit' });

try {
    await withTimeout(client.connect(transport), 'connect');
    summary.connected = true;
} catch (e) {
    summary.connected = false;
    summary.errors.push(`connect: ${e?.stack ?? e}`);
}

const input = createInterface({ input: process.stdin });
const lines = input[Symbol.asyncIterator]();

if (summary.connected) {
    await step('listTools', async () => (await client.listTools()).tools.map(t => t.name).sort());
    await step('listTables', () => call('list_tables', {}));
    await step('query', () => call('query', { sql: plan.query }));
    await step('read', async () => {
        const result = await client.readResource({ uri: plan.read });
        return result.contents.map(c => ({ uri: c.uri, mimeType: c.mimeType ?? null, text: c.text ?? null }));
    });
    await step('declined', () => call('execute', { sql: plan.execute }));
    process.stdout.write(JSON.stringify({ awaiting: 'declined' }) + '\n');
    await lines.next();
    await step('accepted', () => call('execute', { sql: plan.execute }));
    summary.steps.asked = asked;
}
input.close();

summary.era = client.getProtocolEra() ?? null;
summary.negotiatedVersion = client.getNegotiatedProtocolVersion() ?? null;
summary.wire = {
    methods: [...new Set(wire.methods)].sort(),
    metaVersions: [...wire.metaVersions].sort(),
    headerVersions: [...wire.headerVersions].sort(),
    sentInitialize: wire.methods.includes('initialize')
};
try {
    await withTimeout(client.close(), 'close');
} catch (e) {
    summary.errors.push(`close: ${e?.stack ?? e}`);
}
process.stdout.write(JSON.stringify(summary) + '\n');
process.exit(summary.errors.length === 0 ? 0 : 1);
