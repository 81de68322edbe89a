import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Synchronization

/// How one push service trades its credentials for an OAuth2 access token: FCM signs a JWT
/// assertion (RFC 7523), WNS sends a client id and secret (client credentials grant).
protocol AccessTokenRequest: Sendable {
    /// The service as messages name it: `FCM`, `WNS`.
    var serviceName: String { get }

    /// One exchange at the token endpoint. Throws ``AccessTokenFailure``; any other error
    /// counts as a transient failure (no answer).
    func requestToken(issuedAt: Date) async throws -> IssuedAccessToken
}

/// What a token endpoint issued.
struct IssuedAccessToken: Sendable, Hashable {
    var accessToken: String
    /// Seconds the token is valid for, from when it was requested.
    var lifetime: TimeInterval
}

/// Why no access token could be had; `transient` failures (no answer, 5xx, 429) are retryable.
struct AccessTokenFailure: Error, Sendable {
    var error: PushProviderError
    var transient: Bool
    /// The OAuth error code (`invalid_grant`, `invalid_client`, …), if the endpoint sent one.
    var oauthError: String?
}

/// OAuth2 access tokens for a push service, shared by every send of one provider.
///
/// The token is cached until five minutes before it expires. Concurrent senders that need
/// a token share one in-flight exchange, and a failed exchange is remembered for a few
/// seconds, so a fan-out never floods the token endpoint. What an exchange sends is up to
/// `Request`.
final class AccessTokenSource<Request: AccessTokenRequest>: Sendable {
    /// A token is replaced this long before the service says it expires.
    static var refreshMargin: TimeInterval { 5 * 60 }
    /// A failed exchange is reported to sends for this long before it is tried again.
    static var failureHoldOff: TimeInterval { 5 }

    typealias Failure = AccessTokenFailure

    struct AccessToken: Sendable, Hashable {
        /// `Bearer <token>`, built once.
        var authorization: String
        var refreshAt: Date
        var generation: Int
    }

    private struct State: Sendable {
        var current: AccessToken?
        var inFlight: Task<AccessToken, any Error>?
        var lastGeneration = 0
        var lastFailure: (failure: Failure, until: Date)?
    }

    let request: Request
    private let now: @Sendable () -> Date
    private let state = Mutex(State())
    private let exchanges = Atomic<Int>(0)

    /// Told the result of every exchange (`nil`: a token was issued), for metrics and the
    /// credential's health.
    private let exchanged: @Sendable (Failure?) -> Void

    init(request: Request, now: @escaping @Sendable () -> Date, exchanged: @escaping @Sendable (Failure?) -> Void = { _ in }) {
        self.request = request
        self.now = now
        self.exchanged = exchanged
    }

    /// Number of token exchanges started (for tests and metrics).
    var exchangeCount: Int { exchanges.load(ordering: .relaxed) }

    /// A valid access token: the cached one, the one being fetched, or a new one.
    func token() async throws(Failure) -> AccessToken {
        let now = self.now()
        let step: TokenStep<AccessToken> = state.withLock { state in
            if let current = state.current, now < current.refreshAt { return .use(current) }
            if let inFlight = state.inFlight { return .wait(inFlight) }
            if let last = state.lastFailure, now < last.until { return .fail(last.failure) }
            let generation = state.lastGeneration + 1
            // Not structured: the exchange must outlive a cancelled first waiter, since every
            // other sender waits for it too. It finishes (or times out) on its own.
            let task = Task { try await self.exchange(generation: generation) }
            state.inFlight = task
            return .wait(task)
        }
        switch step {
        case .use(let token):
            return token
        case .fail(let failure):
            throw failure
        case .wait(let task):
            do {
                return try await task.value
            } catch let failure as Failure {
                throw failure
            } catch {
                throw Failure(
                    error: .tokenRequestFailed("the \(request.serviceName) token exchange failed"), transient: true)
            }
        }
    }

    /// The service refused `token` (401): forget it unless a newer one has replaced it already.
    func invalidate(_ token: AccessToken) {
        state.withLock { state in
            if state.current?.generation == token.generation { state.current = nil }
        }
    }

    /// Cancels an exchange in progress (at shutdown).
    func cancel() {
        state.withLock { $0.inFlight?.cancel() }
    }

    private func exchange(generation: Int) async throws -> AccessToken {
        exchanges.add(1, ordering: .relaxed)
        let issuedAt = now()
        let result: Result<AccessToken, Failure>
        do {
            let issued = try await request.requestToken(issuedAt: issuedAt)
            let lifetime = issued.lifetime
            let reuse = lifetime > 2 * Self.refreshMargin ? lifetime - Self.refreshMargin : lifetime / 2
            result = .success(
                AccessToken(
                    authorization: "Bearer " + issued.accessToken,
                    refreshAt: issuedAt.addingTimeInterval(reuse),
                    generation: generation
                ))
        } catch let failure as Failure {
            result = .failure(failure)
        } catch {
            result = .failure(
                Failure(
                    error: .tokenRequestFailed("the \(request.serviceName) token endpoint could not be reached"),
                    transient: true))
        }
        switch result {
        case .success: exchanged(nil)
        case .failure(let failure): exchanged(failure)
        }
        let now = self.now()
        return try state.withLock { state in
            state.inFlight = nil
            state.lastGeneration = generation
            switch result {
            case .success(let token):
                state.current = token
                state.lastFailure = nil
                return token
            case .failure(let failure):
                state.current = nil
                state.lastFailure = (failure, now.addingTimeInterval(Self.failureHoldOff))
                throw failure
            }
        }
    }

    /// `application/x-www-form-urlencoded`, every byte outside the unreserved set escaped.
    static func formURLEncoded(_ fields: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        allowed.insert(charactersIn: "-._~")
        return fields.map { name, value in
            (name.addingPercentEncoding(withAllowedCharacters: allowed) ?? "") + "="
                + (value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")
        }.joined(separator: "&")
    }
}

/// Where a token exchange goes.
enum AccessTokenRoute: Sendable {
    /// Over AsyncHTTPClient, to the token URI.
    case pool(HTTPClientPool)
    /// Over the push service's own HTTP/2 client, to `target` on its origin: a token endpoint
    /// that shares the origin of the sends (an emulator serving both) takes no connection of
    /// its own.
    case http2(HTTP2Client, target: String)

    /// `form` posted to `tokenURI`, and the whole answer.
    func post(form: String, to tokenURI: String, timeout: TimeAmount) async throws -> HTTPPushResponse {
        let body = ByteBuffer(string: form)
        switch self {
        case .pool(let pool):
            var request = HTTPClientRequest(url: tokenURI)
            request.method = .POST
            request.headers = ["content-type": "application/x-www-form-urlencoded", "accept": "application/json"]
            request.body = .bytes(body)
            return try await pool.send(request, authorization: nil, timeout: timeout)
        case .http2(let client, let target):
            let request = HTTP2PushRequest(
                path: target,
                fields: [("content-type", "application/x-www-form-urlencoded"), ("accept", "application/json")],
                body: body)
            return try await client.send(request, authorization: nil, timeout: timeout)
        }
    }
}

extension AccessTokenRequest {
    /// POSTs `fields` as a form to `tokenURI` and reads the OAuth2 answer:
    /// `{"access_token", "token_type", "expires_in"}`, or `{"error", "error_description"}`
    /// with a 4xx. `defaultLifetime` applies when the answer has no `expires_in`.
    func exchangeForm(
        _ fields: [(String, String)],
        tokenURI: String,
        route: AccessTokenRoute,
        timeout: TimeAmount,
        defaultLifetime: TimeInterval,
        logger: Logger
    ) async throws -> IssuedAccessToken {
        let prefix = serviceName.lowercased()
        let status: Int
        let data: Data
        do {
            let response = try await route.post(
                form: AccessTokenSource<Self>.formURLEncoded(fields), to: tokenURI, timeout: timeout)
            status = response.status
            data = response.body.map { Data($0.readableBytesView) } ?? Data()
        } catch {
            // What went wrong on the way (a connect timeout, a TLS failure) is what an operator
            // needs; the sends report only that the endpoint was unreachable.
            logger.warning(
                "\(serviceName) token endpoint unreachable",
                metadata: ["\(prefix).token_uri": "\(tokenURI)", "error": "\(error)"])
            throw AccessTokenFailure(
                error: .tokenRequestFailed("the \(serviceName) token endpoint could not be reached: \(error)"), transient: true)
        }
        guard status == 200 else {
            let oauth = try? JSONDecoder().decode(OAuthErrorResponse.self, from: data)
            var message = "the \(serviceName) token endpoint answered \(status)"
            if let code = oauth?.error { message += " \(code)" }
            if let description = oauth?.error_description { message += ": \(description.prefix(200))" }
            logger.warning(
                "\(serviceName) access token refused",
                metadata: ["\(prefix).status": "\(status)", "\(prefix).oauth_error": "\(oauth?.error ?? "")"])
            throw AccessTokenFailure(
                error: .tokenRequestFailed(message), transient: status >= 500 || status == 429, oauthError: oauth?.error)
        }
        guard let token = try? JSONDecoder().decode(OAuthTokenResponse.self, from: data), !token.access_token.isEmpty else {
            throw AccessTokenFailure(
                error: .tokenRequestFailed("the \(serviceName) token endpoint sent no access token"), transient: true)
        }
        let lifetime = token.expires_in.flatMap { $0 > 0 ? $0 : nil } ?? defaultLifetime
        logger.debug("\(serviceName) access token issued", metadata: ["\(prefix).expires_in": "\(lifetime)"])
        return IssuedAccessToken(accessToken: token.access_token, lifetime: lifetime)
    }
}

/// What ``AccessTokenSource/token()`` does next.
private enum TokenStep<Token: Sendable> {
    case use(Token)
    case wait(Task<Token, any Error>)
    case fail(AccessTokenFailure)
}

/// A token endpoint's answer to a granted request (RFC 6749 §5.1).
private struct OAuthTokenResponse: Decodable {
    var access_token: String
    var expires_in: Double?
    var token_type: String?
}

/// A token endpoint's answer to a refused request (RFC 6749 §5.2).
private struct OAuthErrorResponse: Decodable {
    var error: String?
    var error_description: String?
}
