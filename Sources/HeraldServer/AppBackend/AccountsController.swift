import Foundation
import HeraldCore
import HeraldStore
public import Hummingbird
import Logging

/// `POST /api/accounts` (sign up), `POST /api/token` (sign in), `DELETE /api/token` (sign out).
public struct AccountsController: Sendable {
    let accounts: Accounts

    public init(accounts: Accounts) {
        self.accounts = accounts
    }

    public func addRoutes(to group: RouterGroup<AppRequestContext>) {
        group.post("accounts", use: signUp)
        group.post("token", use: signIn)
        group.delete("token", use: signOut)
    }

    struct TokenView: Encodable {
        var token: String
        var tokenType = "Bearer"
        var username: String
        var expiresAt: Date
    }

    @Sendable func signUp(request: Request, context: AppRequestContext) async throws -> Response {
        let (username, password) = try await credentials(request, context: context)
        let account = try await accounts.signUp(username: username, password: password, client: context.clientKey)
        context.logger.info("Account created", metadata: ["herald.user": "\(account.username)"])
        return try .json(["username": account.username], status: .created)
    }

    /// Sign in with `{"username", "password"}` or HTTP Basic; answers a bearer token.
    @Sendable func signIn(request: Request, context: AppRequestContext) async throws -> Response {
        let username: String
        let password: String
        if let header = request.headers[.authorization], header.lowercased().hasPrefix("basic "),
            let decoded = UserAuthenticator.decodeBasic(String(header.dropFirst(6)))
        {
            (username, password) = decoded
        } else {
            (username, password) = try await credentials(request, context: context)
        }
        guard let user = try await accounts.verify(username: username, password: password, client: context.clientKey) else {
            throw HeraldError.unauthorized("wrong user name or password")
        }
        let (token, expiresAt) = try await accounts.issueToken(for: user)
        return try .json(TokenView(token: token, username: user, expiresAt: expiresAt))
    }

    @Sendable func signOut(request: Request, context: AppRequestContext) async throws -> Response {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") else {
            throw HeraldError.unauthorized("send the bearer token to revoke")
        }
        try await accounts.revoke(token: String(header.dropFirst(7)).trimmingSpaces())
        return Response(status: .noContent)
    }

    private func credentials(_ request: Request, context: AppRequestContext) async throws -> (String, String) {
        let body = try await request.decodeJSONBody(context: context)
        guard let username = body.member("username")?.stringValue, let password = body.member("password")?.stringValue else {
            throw HeraldError.badRequest(#"send {"username": "…", "password": "…"}"#)
        }
        return (username, password)
    }
}
