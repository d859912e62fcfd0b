// The official TypeScript SDK v2 client (@modelcontextprotocol/client), pinned to 2026-07-28, against
// `kelson serve` behind an OAuth authorization server (kelson-auth):
//
//   node ts-auth-client.mjs URL token TOKEN
//       with a bearer token the caller obtained (the SDK's minimal `authProvider: { token }`);
//   node ts-auth-client.mjs URL client-credentials CLIENT_ID CLIENT_SECRET ISSUER SCOPE
//       with the SDK's own OAuth flow (ClientCredentialsProvider): on the server's 401 it reads
//       `resource_metadata` from WWW-Authenticate, fetches that protected-resource metadata, the
//       authorization server's metadata, and a client_credentials token for the resource.
//
// Steps: connect, list tools, call list_tables. The last line on stdout is one JSON summary: the
// steps' outcomes, `errors`, and every HTTP request the SDK made (method, URL, status).

import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const VERSION = '2026-07-28';
const STEP_TIMEOUT_MS = 15000;

const [url, mode, ...rest] = process.argv.slice(2);
if (!url || (mode !== 'token' && mode !== 'client-credentials')) {
    console.error('usage: ts-auth-client.mjs URL token TOKEN | URL client-credentials ID SECRET ISSUER SCOPE');
    process.exit(2);
}

const requests = [];
async function recordingFetch(input, init) {
    const target = input instanceof Request ? input.url : String(input);
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    const entry = { method, url: target, status: null };
    requests.push(entry);
    const response = await fetch(input, init);
    entry.status = response.status;
    return response;
}

let authProvider;
if (mode === 'token') {
    const [token] = rest;
    authProvider = { token: async () => token };
} else {
    const [clientId, clientSecret, issuer, scope] = rest;
    authProvider = new ClientCredentialsProvider({ clientId, clientSecret, scope, expectedIssuer: issuer });
}

function withTimeout(promise, what) {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} timed out`)), STEP_TIMEOUT_MS);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const summary = { sdk: '@modelcontextprotocol/client 2.4.0', mode, steps: {}, errors: [], requests };
const client = new Client(
    { name: 'interop-ts-auth-client', version: '2.4.0' },
    { versionNegotiation: { mode: { pin: VERSION } } }
);
const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch, authProvider });

async function step(name, run) {
    try {
        summary.steps[name] = await withTimeout(run(), name);
    } catch (e) {
        summary.errors.push(`${name}: ${e?.stack ?? e}`);
    }
}

await step('connect', async () => {
    await client.connect(transport);
    return true;
});
if (summary.errors.length === 0) {
    await step('listTools', async () => (await client.listTools()).tools.map((t) => t.name).sort());
    await step('listTables', async () => {
        const result = await client.callTool({ name: 'list_tables', arguments: {} });
        return { isError: result.isError ?? false, text: result.content?.[0]?.text ?? null };
    });
}
try {
    await withTimeout(client.close(), 'close');
} catch {
    // Closing is not under test.
}
console.log(JSON.stringify(summary));
process.exit(0);
