import Foundation
import HeraldCore
public import Hummingbird
import Logging

/// Authenticates every request of the routes it guards, and sets ``AppRequestContext/user``.
///
/// Accepts `Authorization: Bearer <token>` (from `POST /api/token`) and
/// `Authorization: Basic …` checked against real accounts. With
/// ``ServerConfiguration/insecureDemoAuth`` on, Basic credentials whose user name equals the
/// password are accepted with no account: the notify-users tutorial's test scheme.
public struct UserAuthenticator: RouterMiddleware {
    public typealias Context = AppRequestContext
    let accounts: Accounts

    public init(accounts: Accounts) {
        self.accounts = accounts
    }

    public func handle(
        _ request: Request,
        context: AppRequestContext,
        next: (Request, AppRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.user = try await authenticate(request, client: context.clientKey)
        context.logger[metadataKey: "herald.user"] = "\(context.user ?? "-")"
        return try await next(request, context)
    }

    func authenticate(_ request: Request, client: String) async throws -> String {
        guard let header = request.headers[.authorization] else {
            throw HeraldError.unauthorized("sign in: send Authorization: Bearer <token> (from POST /api/token) or Basic credentials")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else { throw HeraldError.unauthorized("malformed Authorization header") }
        let scheme = parts[0].lowercased()
        let value = parts[1].trimmingSpaces()
        switch scheme {
        case "bearer":
            guard let user = try await accounts.user(forToken: value) else {
                throw HeraldError.unauthorized("the bearer token is invalid or expired; sign in again")
            }
            return user
        case "basic":
            guard let (username, password) = Self.decodeBasic(value) else {
                throw HeraldError.unauthorized("malformed Basic credentials")
            }
            if accounts.configuration.insecureDemoAuth, username == password,
                let name = try? Accounts.normalizedUsername(username)
            {
                return name
            }
            guard let user = try await accounts.verify(username: username, password: password, client: client) else {
                throw HeraldError.unauthorized("wrong user name or password")
            }
            return user
        default:
            throw HeraldError.unauthorized("unsupported Authorization scheme; use Bearer or Basic")
        }
    }

    static func decodeBasic(_ value: String) -> (String, String)? {
        guard let data = Data(base64Encoded: value), let text = String(data: data, encoding: .utf8),
            let colon = text.firstIndex(of: ":")
        else { return nil }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }
}
