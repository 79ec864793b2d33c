// A real OAuth 2.1 authorization server for the tests of `toolhost serve
// --http` as a resource server (rule A1): oidc-provider on 127.0.0.1, on a
// free port. It prints one JSON line on stdout, {"issuer": …, "port": …},
// once it accepts requests, and runs until killed.
//
// Clients (all confidential, HTTP Basic):
//   jwt-client / jwt-client-secret-0123456789     client_credentials, JWT access tokens
//   opaque-client / opaque-client-secret-01234567 client_credentials, opaque access tokens
//   toolhost / toolhost-secret-0123456789abcdef   the resource server itself, for introspection
// and, for an MCP SDK client running the authorization-code flow with PKCE,
// dynamic client registration; logins and consents are granted at once
// (user `alice`), so no person is needed. What a person is granted is the
// policy of ACCOUNT_SCOPES (alice: tools:read alone), whatever the client
// asks for, as an authorization server holds each person to theirs.
//
// Access tokens are bound to the resource indicator asked for (RFC 8707:
// `aud` is the resource) and carry the scopes granted among tools:read,
// tools:write and tools:admin.
//
// Test-only endpoints, beside the real ones:
//   POST /test/sign    {claims, header?} -> {token}: signed with the current
//                      signing key (RS256), for tokens with chosen claims
//   GET  /test/public.pem                 the current signing key's public half
//   POST /test/rotate                     a new signing key, listed first in the
//                                         JWKS (the old one stays listed)
//   GET  /test/stats                      {"jwks": how many times the JWKS was fetched,
//                                          "introspections": how many tokens were introspected,
//                                          "max_introspecting": the most introspected at once}

import crypto from 'node:crypto';
import http from 'node:http';

import Provider from 'oidc-provider';

const SCOPES = ['tools:read', 'tools:write', 'tools:admin'];

// The scopes each person may be granted for a resource.
const ACCOUNT_SCOPES = { alice: ['tools:read'] };
const scopesOf = (accountId) => (ACCOUNT_SCOPES[accountId] ?? []).join(' ');

// The person a request is for, if any: signed in at the authorization
// endpoint, or the one a code or refresh token was issued to.
function personOf(ctx) {
  const { entities = {} } = ctx.oidc;
  let session;
  try {
    session = ctx.oidc.session;
  } catch {
    session = undefined;
  }
  return (
    session?.accountId ??
    entities.AuthorizationCode?.accountId ??
    entities.RefreshToken?.accountId
  );
}

// The grant of `accountId` to `clientId`: OpenID scopes, and the person's
// scopes for each resource asked for.
function grantFor(provider, accountId, clientId, resources) {
  const grant = new provider.Grant({ clientId, accountId });
  // The tools scopes are the provider's too (clients register with them),
  // so the consent covers them all; what an access token for a resource
  // holds is the person's scopes for it alone (getResourceServerInfo).
  grant.addOIDCScope(['openid', 'offline_access', ...SCOPES].join(' '));
  for (const resource of [resources].flat().filter(Boolean)) {
    grant.addResourceScope(resource, scopesOf(accountId));
  }
  return grant;
}

function newKey() {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  return { privateKey, jwk: { ...jwk, kid: crypto.randomUUID(), alg: 'RS256', use: 'sig' } };
}

let keys = [newKey()];

const listener = http.createServer();
await new Promise((resolve) => listener.listen(0, '127.0.0.1', resolve));
const port = listener.address().port;
const issuer = `http://127.0.0.1:${port}`;

function configuration() {
  return {
    clients: [
      {
        client_id: 'jwt-client',
        client_secret: 'jwt-client-secret-0123456789',
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        scope: SCOPES.join(' '),
      },
      {
        client_id: 'opaque-client',
        client_secret: 'opaque-client-secret-01234567',
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        scope: SCOPES.join(' '),
      },
      {
        client_id: 'toolhost',
        client_secret: 'toolhost-secret-0123456789abcdef',
        grant_types: [],
        redirect_uris: [],
        response_types: [],
      },
    ],
    jwks: { keys: keys.map((k) => k.jwk) },
    scopes: ['openid', 'offline_access', ...SCOPES],
    ttl: { ClientCredentials: 300, AccessToken: 300 },
    pkce: { required: () => true },
    clientBasedCORS: () => true,
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource, client) => ({
          // A person's scopes for the resource (others asked for are
          // ignored); a machine's (client credentials): all.
          scope: personOf(ctx) ? scopesOf(personOf(ctx)) : SCOPES.join(' '),
          audience: resource,
          accessTokenTTL: 300,
          accessTokenFormat: client.clientId === 'opaque-client' ? 'opaque' : 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    loadExistingGrant: async (ctx) => {
      // Every login is consented to at once: the person's scopes, for the
      // resource asked for.
      const grant = grantFor(
        ctx.oidc.provider,
        ctx.oidc.session.accountId,
        ctx.oidc.client.clientId,
        ctx.oidc.params.resource,
      );
      await grant.save();
      return grant;
    },
    findAccount: async (ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  };
}

let provider;
function start() {
  provider = new Provider(issuer, configuration());
  provider.on('server_error', (ctx, err) => console.error('server_error', err));
}
start();

function body(req) {
  return new Promise((resolve, reject) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => resolve(data));
    req.on('error', reject);
  });
}

let jwksFetches = 0;
let introspections = 0;
let introspecting = 0;
let maxIntrospecting = 0;

const b64 = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

listener.on('request', async (req, res) => {
  try {
    if (req.method === 'POST' && req.url === '/test/sign') {
      const { claims, header } = JSON.parse(await body(req));
      const { privateKey, jwk } = keys[0];
      const input = `${b64({ alg: 'RS256', typ: 'at+jwt', kid: jwk.kid, ...header })}.${b64(claims)}`;
      const sig = crypto.sign('sha256', Buffer.from(input), privateKey).toString('base64url');
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ token: `${input}.${sig}` }));
    }
    if (req.method === 'GET' && req.url === '/test/public.pem') {
      const pem = crypto.createPublicKey(keys[0].privateKey).export({ type: 'spki', format: 'pem' });
      res.writeHead(200, { 'content-type': 'text/plain' });
      return res.end(pem);
    }
    if (req.method === 'POST' && req.url === '/test/rotate') {
      keys = [newKey(), ...keys];
      start();
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ kid: keys[0].jwk.kid }));
    }
    if (req.method === 'GET' && req.url === '/test/stats') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({
        jwks: jwksFetches,
        introspections,
        max_introspecting: maxIntrospecting,
      }));
    }
    if (req.url === '/jwks') jwksFetches += 1;
    if (req.url === '/token/introspection') {
      introspections += 1;
      introspecting += 1;
      maxIntrospecting = Math.max(maxIntrospecting, introspecting);
      res.on('close', () => {
        introspecting -= 1;
      });
    }
    if (req.url.startsWith('/interaction/')) {
      // Log `alice` in and consent at once (a client asking for
      // offline_access asks for consent every time): her scopes.
      const { params } = await provider.interactionDetails(req, res);
      const grant = grantFor(provider, 'alice', params.client_id, params.resource);
      const grantId = await grant.save();
      return await provider.interactionFinished(
        req,
        res,
        { login: { accountId: 'alice' }, consent: { grantId } },
        { mergeWithLastSubmission: false },
      );
    }
    return provider.callback()(req, res);
  } catch (err) {
    console.error(err);
    res.writeHead(500);
    res.end(String(err));
  }
});

console.log(JSON.stringify({ issuer, port }));
