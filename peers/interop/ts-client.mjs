// An MCP client written with the official TypeScript SDK v2 (@modelcontextprotocol/client), for the
// interop tests of kelson. It connects to a server of the interop profile (see README.md beside this
// file), PINNED to protocol revision 2026-07-28, runs every step, and prints one JSON summary on
// stdout (diagnostics go to stderr).
//
//   node ts-client.mjs http URL
//   node ts-client.mjs stdio COMMAND [ARGS...]
//
// The summary records what went over the wire, not only what the SDK reports: every outgoing
// message's method and `_meta` protocol version, and on HTTP every `MCP-Protocol-Version` header.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const VERSION = '2026-07-28';
const PROTOCOL_VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
const STEP_TIMEOUT_MS = 15000;

const [kind, target, ...rest] = process.argv.slice(2);
if ((kind !== 'http' && kind !== 'stdio') || !target) {
    console.error('usage: ts-client.mjs http URL | stdio COMMAND [ARGS...]');
    process.exit(2);
}

const wire = { methods: [], metaVersions: new Set(), headerVersions: new Set() };

function record(message) {
    if (message && typeof message === 'object' && 'method' in message) {
        wire.methods.push(message.method);
        const version = message.params?._meta?.[PROTOCOL_VERSION_KEY];
        if (version !== undefined) wire.metaVersions.add(version);
    }
}

// Subclassing the stdio transport also makes the SDK probe in place instead of on a sibling process.
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

const summary = {
    sdk: '@modelcontextprotocol/client 2.4.0',
    transport: kind,
    steps: {},
    errors: []
};

async function step(name, run) {
    try {
        summary.steps[name] = await withTimeout(run(), name);
    } catch (e) {
        summary.errors.push(`${name}: ${e?.stack ?? e}`);
    }
}

const elicitations = [];
const client = new Client(
    { name: 'interop-ts-client', version: '2.4.0' },
    {
        capabilities: { elicitation: { form: {} } },
        versionNegotiation: { mode: { pin: VERSION } }
    }
);
client.setRequestHandler('elicitation/create', async request => {
    elicitations.push(request.params.message);
    return { action: 'accept', content: { name: 'interop' } };
});
let toolsChanged = 0;
let onToolsChanged = () => {};
client.setNotificationHandler('notifications/tools/list_changed', () => {
    toolsChanged += 1;
    onToolsChanged();
});

const transport =
    kind === 'http'
        ? new StreamableHTTPClientTransport(new URL(target), { fetch: recordingFetch })
        : new RecordingStdioTransport({ command: target, args: rest, stderr: 'inherit' });

try {
    await withTimeout(client.connect(transport), 'connect');
    summary.connected = true;
} catch (e) {
    summary.connected = false;
    summary.errors.push(`connect: ${e?.stack ?? e}`);
}

if (summary.connected) {
    await step('discover', async () => {
        const d = await client.discover();
        return {
            supportedVersions: d.supportedVersions,
            serverName: d._meta?.['io.modelcontextprotocol/serverInfo']?.name ?? client.getServerVersion()?.name ?? null
        };
    });
    await step('listTools', async () => (await client.listTools()).tools.map(t => t.name).sort());
    await step('add', async () => text(await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } })));
    await step('progress', async () => {
        const seen = [];
        const result = await client.callTool(
            { name: 'count_with_progress', arguments: { steps: 3 } },
            { onprogress: p => seen.push({ progress: p.progress, total: p.total ?? null }), resetTimeoutOnProgress: true }
        );
        return { result: text(result), notifications: seen };
    });
    await step('listResources', async () => (await client.listResources()).resources.map(r => r.uri).sort());
    await step('read', async () => {
        const result = await client.readResource({ uri: 'interop://greeting' });
        return result.contents.map(c => c.text ?? null).join('');
    });
    await step('listPrompts', async () => (await client.listPrompts()).prompts.map(p => p.name).sort());
    await step('prompt', async () => {
        const result = await client.getPrompt({ name: 'greet', arguments: { name: 'interop' } });
        return result.messages.map(m => (m.content?.type === 'text' ? m.content.text : '')).join('');
    });
    await step('elicitation', async () => {
        const result = await client.callTool({ name: 'ask_name', arguments: {} });
        return { result: text(result), asked: [...elicitations] };
    });
    await step('listen', async () => {
        const subscription = await client.listen({ toolsListChanged: true });
        const honored = subscription.honoredFilter;
        const changed = new Promise(resolve => {
            onToolsChanged = resolve;
        });
        const before = toolsChanged;
        const trigger = text(await client.callTool({ name: 'change_tools', arguments: {} }));
        if (toolsChanged === before) await changed;
        await subscription.close();
        return { honored, trigger, received: ['notifications/tools/list_changed'] };
    });
}

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
