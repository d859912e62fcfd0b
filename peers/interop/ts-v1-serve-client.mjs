// An MCP client written with the official TypeScript SDK v1 (@modelcontextprotocol/sdk 1.x), the one
// most hosts embed, for the dual-era interop tests of kelson. It speaks only the handshake era
// (initialize, 2025-11-25) and runs against `kelson serve` with a writable SQLite database and a root
// folder, driven by a plan given as JSON:
//
//   node ts-v1-serve-client.mjs PLAN http URL
//   node ts-v1-serve-client.mjs PLAN stdio COMMAND [ARGS...]
//
// PLAN: {"query": SQL, "read": URI, "subscribe": URI, "awaitUpdate": bool, "execute": SQL}
//
// Steps: list tools; call list_tables and query; list resources and read PLAN.read; subscribe to
// PLAN.subscribe, and with awaitUpdate print {"awaiting":"update","uri":...} on stdout, read one line
// from stdin (the caller changes the resource, then writes the line) and wait for
// notifications/resources/updated; call execute twice with PLAN.execute, declining the approval
// through the elicitation handler the first time, then printing {"awaiting":"declined"} and
// waiting for a line on stdin (the caller checks that nothing was written), and accepting it the
// second time; unsubscribe; close (on HTTP, DELETE the session first, as hosts do).
//
// The last line on stdout is one JSON summary: each step's outcome, `errors`, the negotiated version,
// and what went over the wire (every message's method; on HTTP, every request's HTTP method,
// MCP-Protocol-Version and Mcp-Session-Id headers and the response status).

import { createInterface } from 'node:readline';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const STEP_TIMEOUT_MS = 15000;

const [planJson, kind, target, ...rest] = process.argv.slice(2);
if (!planJson || (kind !== 'http' && kind !== 'stdio') || !target) {
    console.error('usage: ts-v1-serve-client.mjs PLAN http URL | PLAN stdio COMMAND [ARGS...]');
    process.exit(2);
}
const plan = JSON.parse(planJson);

const wire = { methods: [], http: [] };

function record(message) {
    if (message && typeof message === 'object' && 'method' in message) wire.methods.push(message.method);
}

class RecordingStdioTransport extends StdioClientTransport {
    async send(message) {
        record(message);
        return super.send(message);
    }
}

// Every HTTP exchange as a host makes it: its method, the JSON-RPC method of a POST, the two
// protocol headers, and the status it got back.
async function recordingFetch(input, init) {
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    const entry = {
        method: init?.method ?? 'GET',
        rpc: null,
        protocolVersion: headers.get('mcp-protocol-version'),
        sessionId: headers.get('mcp-session-id'),
        status: null
    };
    if (typeof init?.body === 'string') {
        try {
            const message = JSON.parse(init.body);
            record(message);
            entry.rpc = message.method ?? (message.error ? 'error response' : 'response');
        } catch {
            // not JSON: nothing to record
        }
    }
    wire.http.push(entry);
    const response = await fetch(input, init);
    entry.status = response.status;
    return response;
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

const summary = { sdk: '@modelcontextprotocol/sdk 1.32.2', transport: kind, steps: {}, errors: [] };

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
const client = new Client({ name: 'interop-ts-v1-client', version: '1.32.2' }, { capabilities: { elicitation: { form: {} } } });
client.setRequestHandler(ElicitRequestSchema, async request => {
    asked.push({ message: request.params.message, fields: Object.keys(request.params.requestedSchema?.properties ?? {}) });
    return answers[Math.min(asked.length - 1, answers.length - 1)];
});
const updates = [];
let onUpdate = () => {};
client.setNotificationHandler(ResourceUpdatedNotificationSchema, notification => {
    updates.push(notification.params.uri);
    onUpdate();
});

const transport =
    kind === 'http'
        ? new StreamableHTTPClientTransport(new URL(target), { fetch: recordingFetch })
        : // The whole environment goes to the server, so that the caller's settings (its data folder)
          // reach it; the SDK passes only a few variables by default.
          new RecordingStdioTransport({ command: target, args: rest, env: { ...process.env }, stderr: 'inherit' });

// The version the server answered initialize with, read from the message itself (the SDK keeps it
// only on HTTP transports): the client installs its handler as `onmessage`, which this wraps.
let deliver;
Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    set(handler) {
        deliver = handler;
    },
    get() {
        if (!deliver) return undefined;
        return message => {
            const version = message?.result?.protocolVersion;
            if (typeof version === 'string' && summary.negotiatedVersion === undefined) summary.negotiatedVersion = version;
            deliver(message);
        };
    }
});

try {
    await withTimeout(client.connect(transport), 'connect');
    summary.connected = true;
} catch (e) {
    summary.connected = false;
    summary.errors.push(`connect: ${e?.stack ?? e}`);
}

// One line from the caller on stdin.
const input = createInterface({ input: process.stdin });
const lines = input[Symbol.asyncIterator]();

if (summary.connected) {
    summary.serverInfo = client.getServerVersion() ?? null;
    summary.serverCapabilities = client.getServerCapabilities() ?? null;
    await step('listTools', async () => (await client.listTools()).tools.map(t => t.name).sort());
    await step('listTables', () => call('list_tables', {}));
    await step('query', () => call('query', { sql: plan.query }));
    await step('listResources', async () => (await client.listResources()).resources.map(r => r.uri).sort());
    await step('read', async () => {
        const result = await client.readResource({ uri: plan.read });
        return result.contents.map(c => ({ uri: c.uri, mimeType: c.mimeType ?? null, text: c.text ?? null }));
    });
    await step('subscribe', async () => {
        const answer = await client.subscribeResource({ uri: plan.subscribe });
        if (!plan.awaitUpdate) return { answered: answer, updates: [] };
        const updated = new Promise(resolve => {
            onUpdate = () => {
                if (updates.includes(plan.subscribe)) resolve();
            };
        });
        process.stdout.write(JSON.stringify({ awaiting: 'update', uri: plan.subscribe }) + '\n');
        await lines.next();
        if (!updates.includes(plan.subscribe)) await updated;
        return { answered: answer, updates: [...new Set(updates)] };
    });
    await step('declined', () => call('execute', { sql: plan.execute }));
    // The caller looks at the database before the approval that follows.
    process.stdout.write(JSON.stringify({ awaiting: 'declined' }) + '\n');
    await lines.next();
    await step('accepted', () => call('execute', { sql: plan.execute }));
    summary.steps.asked = asked;
    await step('unsubscribe', async () => client.unsubscribeResource({ uri: plan.subscribe }));
}
input.close();

summary.wire = { methods: [...new Set(wire.methods)].sort(), http: wire.http };
try {
    if (kind === 'http' && summary.connected) await withTimeout(transport.terminateSession(), 'terminateSession');
    await withTimeout(client.close(), 'close');
} catch (e) {
    summary.errors.push(`close: ${e?.stack ?? e}`);
}
process.stdout.write(JSON.stringify(summary) + '\n');
process.exit(summary.errors.length === 0 ? 0 : 1);
