// A test authorization server for the MCP server in tests/support/mcp-server.mjs, built from the
// official TypeScript SDK's server-side auth pieces (`mcpAuthRouter`: metadata, dynamic client
// registration, authorize with PKCE, token, refresh; `requireBearerAuth` guarding /mcp).
// Owns: an in-memory provider that signs the person in at once (the authorize step redirects
// straight back with a code), access tokens that live `accessTtlSeconds`, rotating refresh tokens,
// revocation of every access token (`control.revokeAccessTokens()`), and a log of what happened
// (`events`: registrations, grants by type, refused tokens).

import { randomUUID } from 'node:crypto';
import express from 'express';
import { mcpAuthRouter, getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { InvalidGrantError, InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';

class TestAuthProvider {
  constructor({ accessTtlSeconds, events }) {
    this.accessTtlSeconds = accessTtlSeconds;
    this.events = events;
    this.codes = new Map();
    this.access = new Map();
    this.refresh = new Map();
    const clients = new Map();
    this.clientsStore = {
      getClient: async (id) => clients.get(id),
      registerClient: async (client) => {
        clients.set(client.client_id, client);
        events.push({ type: 'register', redirectUris: client.redirect_uris });
        return client;
      },
    };
  }

  async authorize(client, params, res) {
    const code = randomUUID();
    this.codes.set(code, { clientId: client.client_id, params });
    const target = new URL(params.redirectUri);
    target.searchParams.set('code', code);
    if (params.state !== undefined) target.searchParams.set('state', params.state);
    this.events.push({ type: 'authorize', resource: params.resource?.href ?? null });
    res.redirect(target.toString());
  }

  async challengeForAuthorizationCode(_client, code) {
    const entry = this.codes.get(code);
    if (!entry) throw new InvalidGrantError('unknown code');
    return entry.params.codeChallenge;
  }

  issue(clientId, resource) {
    const token = randomUUID();
    const refreshToken = randomUUID();
    this.access.set(token, { clientId, resource, expiresAt: Math.floor(Date.now() / 1000) + this.accessTtlSeconds });
    this.refresh.set(refreshToken, { clientId, resource });
    return { access_token: token, token_type: 'bearer', expires_in: this.accessTtlSeconds, refresh_token: refreshToken };
  }

  async exchangeAuthorizationCode(client, code) {
    const entry = this.codes.get(code);
    if (!entry || entry.clientId !== client.client_id) throw new InvalidGrantError('unknown code');
    this.codes.delete(code);
    this.events.push({ type: 'grant', grant: 'authorization_code' });
    return this.issue(client.client_id, entry.params.resource);
  }

  async exchangeRefreshToken(client, refreshToken) {
    const entry = this.refresh.get(refreshToken);
    if (!entry || entry.clientId !== client.client_id) throw new InvalidGrantError('unknown refresh token');
    this.refresh.delete(refreshToken);
    this.events.push({ type: 'grant', grant: 'refresh_token' });
    return this.issue(client.client_id, entry.resource);
  }

  /** Forgets every access token (as a server that revokes them does). */
  revokeAccessTokens() {
    this.access.clear();
  }

  async verifyAccessToken(token) {
    const entry = this.access.get(token);
    if (!entry) {
      this.events.push({ type: 'refused-token' });
      throw new InvalidTokenError('unknown token');
    }
    return { token, clientId: entry.clientId, scopes: [], expiresAt: entry.expiresAt, resource: entry.resource };
  }
}

/**
 * An express app serving the authorization server at `origin` and `/mcp` through `mcpHandler`
 * once a bearer token passes; `/__calls` and other paths go to `mcpHandler` unguarded.
 */
export function oauthApp({ origin, mcpHandler, accessTtlSeconds = 3600, events, control, resource, issuerHost }) {
  const provider = new TestAuthProvider({ accessTtlSeconds, events });
  if (control) control.revokeAccessTokens = () => provider.revokeAccessTokens();
  const mcpUrl = new URL('/mcp', origin);
  const app = express();
  // `resource`: the resource the metadata names (a hostile server names another one).
  const resourceServerUrl = resource ? new URL(resource) : mcpUrl;
  // `issuerHost`: the metadata names the authorization server under this host name (same port).
  const issuerUrl = new URL(origin);
  if (issuerHost) issuerUrl.hostname = issuerHost;
  app.use(mcpAuthRouter({ provider, issuerUrl, resourceServerUrl, scopesSupported: ['mcp:tools'] }));
  const bearer = requireBearerAuth({ verifier: provider, resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl), expectedResource: mcpUrl });
  app.all('/mcp', (req, res, next) => {
    const guard = () => bearer(req, res, () => {
      events.push({ type: 'mcp', method: req.method });
      next();
    });
    guard();
  }, (req, res) => mcpHandler(req, res));
  app.use((req, res) => mcpHandler(req, res));
  return app;
}
