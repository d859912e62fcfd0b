// A real OAuth 2.1 authorization server for kelson-auth's tests: oidc-provider (pinned in
// peers/package.json) on a loopback port.
//
//   node oidc-as.mjs --keys FILE [--port N] [--sign KID] --resource URL [--resource URL ...]
//                    [--opaque URL ...] [--ttl SECONDS]
//
// It issues access tokens with RFC 8707 resource indicators: a JWT (RS256) whose `aud` is the
// requested `resource` for every --resource, an opaque token for every --opaque (to be
// introspected), valid for --ttl seconds (default 600). Token introspection (RFC 7662) and
// revocation (RFC 7009) are on.
//
// Grants: client_credentials for the clients below; the authorization code grant with PKCE for
// clients that register dynamically (RFC 7591, open registration), with refresh tokens. Its
// login and consent need no person: /interaction/UID signs in the user "alice" and grants the
// scopes the client asked for, so a client that follows the redirects (with their cookies) gets
// its code, as a browser whose user approves would.
//
// Clients (client_secret_basic):
//   kelson-client / kelson-client-secret   client_credentials, every scope below
//   mcp-other  / mcp-other-secret    client_credentials, the same scopes: a second principal
//   kelson     / kelson-secret       the resource server itself, for introspection
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
const opt = { port: 0, keys: null, sign: 'a', resources: [], opaque: [], ttl: 600 };
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  const v = args[++i];
  if (a === '--port') opt.port = Number(v);
  else if (a === '--keys') opt.keys = v;
  else if (a === '--sign') opt.sign = v;
  else if (a === '--resource') opt.resources.push(v);
  else if (a === '--opaque') opt.opaque.push(v);
  else if (a === '--ttl') opt.ttl = Number(v);
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

// sample:read and sample:write are what `kelson serve` asks for its sample database by default,
// files:read for its file roots.
const scopes = 'mcp:tools mcp:admin mcp:read sample:read sample:write files:read';
const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'kelson-client',
      client_secret: 'kelson-client-secret',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      scope: scopes,
    },
    {
      client_id: 'mcp-other',
      client_secret: 'mcp-other-secret',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      scope: scopes,
    },
    {
      client_id: 'kelson',
      client_secret: 'kelson-secret',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
    },
  ],
  jwks: { keys },
  scopes: ['openid', 'offline_access', ...scopes.split(' ')],
  findAccount: (ctx, accountId) => ({ accountId, claims: () => ({ sub: accountId }) }),
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  // A refresh token for every authorization code of a client allowed the refresh_token grant.
  issueRefreshToken: (ctx, client) => client.grantTypeAllowed('refresh_token'),
  pkce: { required: () => true },
  // Explicit lifetimes of the interaction artifacts (the defaults print a notice).
  ttl: {
    Interaction: 600,
    Session: 3600,
    Grant: 3600,
  },
  clientBasedCORS: () => true,
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
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
          accessTokenTTL: opt.ttl,
          accessTokenFormat: jwt ? 'jwt' : 'opaque',
          ...(jwt ? { jwt: { sign: { alg: 'RS256' } } } : {}),
        };
      },
    },
  },
});
provider.on('server_error', (ctx, err) => console.error('oidc-as: server_error', err));

// The user's side of the authorization code grant, approving at once: sign in as "alice", then
// grant the scopes and resource the client asked for.
async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  let result;
  if (prompt.name === 'login') {
    result = { login: { accountId: 'alice' } };
  } else {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    // What the consent prompt says is missing: exactly what the client asked for.
    const missing = prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [resource, scopes] of Object.entries(missing.missingResourceScopes || {})) {
      grant.addResourceScope(resource, scopes.join(' '));
    }
    result = { consent: { grantId: await grant.save() } };
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
}

const callback = provider.callback();
server.on('request', (req, res) => {
  if (req.url.startsWith('/interaction/')) {
    interaction(req, res).catch((err) => {
      console.error('oidc-as: interaction', err);
      res.statusCode = 500;
      res.end(String(err));
    });
  } else {
    callback(req, res);
  }
});
console.log(JSON.stringify({ issuer, port }));
// The one line on stdout is read; whoever started the server may close the pipe after it, and a
// later write there must not take the server down.
process.stdout.on('error', () => {});
console.log = console.error;
console.warn = console.error;
console.info = console.error;
