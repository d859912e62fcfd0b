// A real OAuth 2.1 authorization server for mcp-auth's tests: oidc-provider (pinned in
// peers/package.json) on a loopback port.
//
//   node oidc-as.mjs --keys FILE [--port N] [--sign KID] --resource URL [--resource URL ...]
//                    [--opaque URL ...]
//
// It issues client_credentials access tokens with RFC 8707 resource indicators: a JWT (RS256)
// whose `aud` is the requested `resource` for every --resource, an opaque token for every --opaque
// (to be introspected). Token introspection (RFC 7662) and revocation (RFC 7009) are on.
//
// Clients (client_secret_basic):
//   mcp-client / mcp-client-secret   client_credentials, scopes mcp:tools mcp:admin mcp:read sample:read
//   mcp-rs     / mcp-rs-secret       the resource server itself, for introspection
//
// Keys: FILE holds private RSA JWKs {"keys": [...]}; missing kids among --sign and "a" are
// generated and saved, so a restart on the same port (same issuer) keeps them. The provider
// signs with --sign (default "a") and publishes every key in FILE, the signing key first: restart
// with another --sign to rotate.
//
// It prints one JSON line, {"issuer": "...", "port": N}, once it listens, and runs until killed.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import Provider from 'oidc-provider';

const args = process.argv.slice(2);
const opt = { port: 0, keys: null, sign: 'a', resources: [], opaque: [] };
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  const v = args[++i];
  if (a === '--port') opt.port = Number(v);
  else if (a === '--keys') opt.keys = v;
  else if (a === '--sign') opt.sign = v;
  else if (a === '--resource') opt.resources.push(v);
  else if (a === '--opaque') opt.opaque.push(v);
  else {
    console.error(`oidc-as: unknown argument ${a}`);
    process.exit(2);
  }
}
if (!opt.keys) {
  console.error('oidc-as: --keys FILE is required');
  process.exit(2);
}

let stored = { keys: [] };
if (fs.existsSync(opt.keys)) stored = JSON.parse(fs.readFileSync(opt.keys, 'utf8'));
for (const kid of new Set(['a', opt.sign])) {
  if (!stored.keys.some((k) => k.kid === kid)) {
    const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    stored.keys.push({ ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' });
  }
}
fs.writeFileSync(opt.keys, JSON.stringify(stored));
// oidc-provider signs with the first key fitting the algorithm.
const keys = [
  ...stored.keys.filter((k) => k.kid === opt.sign),
  ...stored.keys.filter((k) => k.kid !== opt.sign),
];

// The issuer needs the port before the provider exists: bind first, then attach.
const server = http.createServer();
await new Promise((resolve) => server.listen(opt.port, '127.0.0.1', resolve));
const port = server.address().port;
const issuer = `http://127.0.0.1:${port}`;

// sample:read is what `mcp serve` asks for its sample database's tools by default.
const scopes = 'mcp:tools mcp:admin mcp:read sample:read';
const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'mcp-client',
      client_secret: 'mcp-client-secret',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      scope: scopes,
    },
    {
      client_id: 'mcp-rs',
      client_secret: 'mcp-rs-secret',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
    },
  ],
  jwks: { keys },
  scopes: scopes.split(' '),
  clientBasedCORS: () => true,
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // Without a `resource` parameter no access token is issued for this server.
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource) => {
        const jwt = opt.resources.includes(resource);
        if (!jwt && !opt.opaque.includes(resource)) {
          throw new Provider.errors.InvalidTarget();
        }
        return {
          scope: scopes,
          audience: resource,
          accessTokenTTL: 600,
          accessTokenFormat: jwt ? 'jwt' : 'opaque',
          ...(jwt ? { jwt: { sign: { alg: 'RS256' } } } : {}),
        };
      },
    },
  },
});
provider.on('server_error', (ctx, err) => console.error('oidc-as: server_error', err));
server.on('request', provider.callback());
console.log(JSON.stringify({ issuer, port }));
