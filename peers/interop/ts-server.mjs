// An MCP server written with the official TypeScript SDK v2 (@modelcontextprotocol/server and
// @modelcontextprotocol/node), for the interop tests of kelson. It serves the interop profile
// (see README.md beside this file) in the 2026-07-28 stateless mode.
//
//   node ts-server.mjs stdio              serve on stdin/stdout (serveStdio)
//   node ts-server.mjs http [PORT]        serve Streamable HTTP on 127.0.0.1:PORT (default 0: any
//                                         free port) at /mcp (createMcpHandler); the first line on
//                                         stdout is "listening on http://127.0.0.1:PORT/mcp"
//
// Logs go to stderr only: on stdio, stdout carries protocol messages.

import { createServer } from 'node:http';
import { McpServer, createMcpHandler, inputRequired, inputResponse } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { localhostHostValidation, localhostOriginValidation, toNodeHandler } from '@modelcontextprotocol/node';
import * as z from 'zod';

const GREETING_URI = 'interop://greeting';
const GREETING_TEXT = 'Hello from the interop fixture';

const mode = process.argv[2];
if (mode !== 'stdio' && mode !== 'http') {
    console.error('usage: ts-server.mjs stdio | http [PORT]');
    process.exit(2);
}

// How a tool announces a tools list change: on HTTP the handler's listen bus (every request gets a
// fresh server instance), on stdio the connection's pinned instance.
let announceToolsChanged = () => {};

function buildServer() {
    const server = new McpServer(
        { name: 'interop-ts-server', version: '2.4.0' },
        { capabilities: { tools: { listChanged: true }, resources: {}, prompts: {} } }
    );

    server.registerTool(
        'add',
        {
            description: 'Adds two numbers',
            inputSchema: z.object({ a: z.number(), b: z.number() })
        },
        async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] })
    );

    server.registerTool(
        'count_with_progress',
        {
            description: 'Counts to `steps` (default 3), reporting progress at each step',
            inputSchema: z.object({ steps: z.number().int().min(1).max(20).optional() })
        },
        async ({ steps }, ctx) => {
            const total = steps ?? 3;
            const token = ctx.mcpReq._meta?.progressToken;
            for (let i = 1; i <= total; i++) {
                if (token !== undefined) {
                    await ctx.mcpReq.notify({
                        method: 'notifications/progress',
                        params: { progressToken: token, progress: i, total, message: `step ${i} of ${total}` }
                    });
                }
                await new Promise(resolve => setTimeout(resolve, 10));
            }
            return { content: [{ type: 'text', text: `counted to ${total}` }] };
        }
    );

    server.registerTool(
        'ask_name',
        { description: "Asks the user's name through elicitation (MRTR, key `user`), then greets them" },
        async ctx => {
            const answer = inputResponse(ctx.mcpReq.inputResponses, 'user');
            if (answer.kind === 'missing') {
                return inputRequired({
                    inputRequests: {
                        user: inputRequired.elicit({
                            message: 'What is your name?',
                            requestedSchema: {
                                type: 'object',
                                properties: { name: { type: 'string', description: 'Your name' } },
                                required: ['name']
                            }
                        })
                    }
                });
            }
            if (answer.kind === 'elicit' && answer.action === 'accept' && typeof answer.content?.name === 'string') {
                return { content: [{ type: 'text', text: `Hello, ${answer.content.name}!` }] };
            }
            const action = answer.kind === 'elicit' ? answer.action : answer.kind;
            return { content: [{ type: 'text', text: `No name given (${action})` }] };
        }
    );

    server.registerTool(
        'change_tools',
        { description: 'Announces a tools list change to every listen stream' },
        async () => {
            announceToolsChanged(server);
            return { content: [{ type: 'text', text: 'tools changed' }] };
        }
    );

    server.registerResource(
        'greeting',
        GREETING_URI,
        { description: 'A fixed greeting', mimeType: 'text/plain' },
        async uri => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: GREETING_TEXT }] })
    );

    server.registerPrompt(
        'greet',
        { description: 'Asks to greet someone', argsSchema: z.object({ name: z.string() }) },
        ({ name }) => ({
            messages: [{ role: 'user', content: { type: 'text', text: `Please greet ${name}.` } }]
        })
    );

    return server;
}

if (mode === 'stdio') {
    announceToolsChanged = server => server.sendToolListChanged();
    serveStdio(() => buildServer(), { onerror: e => console.error('ts-server:', e) });
} else {
    const handler = createMcpHandler(() => buildServer(), { onerror: e => console.error('ts-server:', e) });
    announceToolsChanged = () => handler.notify.toolsChanged();
    const serve = toNodeHandler(handler);
    const validateHost = localhostHostValidation();
    const validateOrigin = localhostOriginValidation();
    const http = createServer((req, res) => {
        if (!validateHost(req, res) || !validateOrigin(req, res)) return;
        if (new URL(req.url ?? '/', 'http://localhost').pathname !== '/mcp') {
            res.writeHead(404).end();
            return;
        }
        serve(req, res).catch(e => console.error('ts-server:', e));
    });
    http.listen(Number(process.argv[3] ?? 0), '127.0.0.1', () => {
        const { port } = http.address();
        process.stdout.write(`listening on http://127.0.0.1:${port}/mcp\n`);
    });
    const stop = () => {
        handler.close().finally(() => process.exit(0));
        http.close();
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
}
