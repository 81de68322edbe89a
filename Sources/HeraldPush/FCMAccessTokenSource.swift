import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import _CryptoExtras

/// OAuth2 access tokens for the FCM API, from a service account (RFC 7523 JWT bearer grant).
///
/// The token is cached until five minutes before it expires. Concurrent senders that need
/// a token share one in-flight exchange, and a failed exchange is remembered for a few
/// seconds, so a fan-out never floods the token endpoint.
final class FCMAccessTokenSource: Sendable {
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// A token is replaced this long before Google says it expires.
    static let refreshMargin: TimeInterval = 5 * 60
    /// A failed exchange is reported to sends for this long before it is tried again.
    static let failureHoldOff: TimeInterval = 5

    struct AccessToken: Sendable, Hashable {
        /// `Bearer <token>`, built once.
        var authorization: String
        var refreshAt: Date
        var generation: Int
    }

    /// Why no token could be had; `transient` failures (no answer, 5xx) are retryable.
    struct Failure: Error, Sendable {
        var error: PushProviderError
        var transient: Bool
        /// The OAuth error code (`invalid_grant`, …), if the endpoint sent one.
        var oauthError: String?
    }

    private struct State: Sendable {
        var current: AccessToken?
        var inFlight: Task<AccessToken, any Error>?
        var lastGeneration = 0
        var lastFailure: (failure: Failure, until: Date)?
    }

    private let account: FCMServiceAccount
    private let key: _RSA.Signing.PrivateKey
    private let tokenURI: String
    private let pool: HTTPClientPool
    private let timeout: TimeAmount
    private let now: @Sendable () -> Date
    private let logger: Logger
    private let state = Mutex(State())
    private let exchanges = Atomic<Int>(0)

    init(
        account: FCMServiceAccount,
        key: _RSA.Signing.PrivateKey,
        tokenURI: String,
        pool: HTTPClientPool,
        timeout: TimeAmount,
        now: @escaping @Sendable () -> Date,
        logger: Logger
    ) {
        self.account = account
        self.key = key
        self.tokenURI = tokenURI
        self.pool = pool
        self.timeout = timeout
        self.now = now
        self.logger = logger
    }

    /// Number of token exchanges started (for tests and metrics).
    var exchangeCount: Int { exchanges.load(ordering: .relaxed) }

    /// A valid access token: the cached one, the one being fetched, or a new one.
    func token() async throws(Failure) -> AccessToken {
        enum Step {
            case use(AccessToken)
            case wait(Task<AccessToken, any Error>)
            case fail(Failure)
        }
        let now = self.now()
        let step: Step = state.withLock { state in
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
                throw Failure(error: .tokenRequestFailed("the FCM token exchange failed"), transient: true)
            }
        }
    }

    /// The API refused `token` (401): forget it unless a newer one has replaced it already.
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
        let result: Result<AccessToken, Failure>
        do {
            result = .success(try await requestToken(generation: generation))
        } catch let failure as Failure {
            result = .failure(failure)
        } catch {
            result = .failure(
                Failure(error: .tokenRequestFailed("the FCM token endpoint could not be reached"), transient: true))
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

    private func requestToken(generation: Int) async throws -> AccessToken {
        struct Header: Encodable {
            var alg = "RS256"
            var typ = "JWT"
            var kid: String?
        }
        struct Claims: Encodable {
            var iss: String
            var scope: String
            var aud: String
            var iat: Int
            var exp: Int
        }
        struct TokenResponse: Decodable {
            var access_token: String
            var expires_in: Double?
            var token_type: String?
        }
        struct ErrorResponse: Decodable {
            var error: String?
            var error_description: String?
        }

        let issuedAt = now()
        let iat = Int(issuedAt.timeIntervalSince1970.rounded(.down))
        let assertion: String
        do {
            assertion = try JSONWebToken.rs256(
                header: Header(kid: account.privateKeyID),
                claims: Claims(iss: account.clientEmail, scope: Self.scope, aud: tokenURI, iat: iat, exp: iat + 3600),
                key: key
            )
        } catch {
            throw Failure(error: .signingFailed("the FCM assertion could not be signed"), transient: false)
        }

        var request = HTTPClientRequest(url: tokenURI)
        request.method = .POST
        request.headers = [
            "content-type": "application/x-www-form-urlencoded",
            "accept": "application/json",
        ]
        request.body = .bytes(
            ByteBuffer(string: Self.formURLEncoded([("grant_type", Self.grantType), ("assertion", assertion)])))

        let response = try await pool.next().execute(request, timeout: timeout)
        let body = try await response.body.collect(upTo: 256 * 1024)
        let status = Int(response.status.code)
        let data = Data(body.readableBytesView)
        guard status == 200 else {
            let oauth = try? JSONDecoder().decode(ErrorResponse.self, from: data)
            var message = "the FCM token endpoint answered \(status)"
            if let code = oauth?.error { message += " \(code)" }
            if let description = oauth?.error_description { message += ": \(description.prefix(200))" }
            logger.warning(
                "FCM access token refused",
                metadata: ["fcm.status": "\(status)", "fcm.oauth_error": "\(oauth?.error ?? "")"])
            throw Failure(error: .tokenRequestFailed(message), transient: status >= 500 || status == 429, oauthError: oauth?.error)
        }
        guard let token = try? JSONDecoder().decode(TokenResponse.self, from: data), !token.access_token.isEmpty else {
            throw Failure(error: .tokenRequestFailed("the FCM token endpoint sent no access token"), transient: true)
        }
        let lifetime = token.expires_in ?? 3600
        let reuse = lifetime > 2 * Self.refreshMargin ? lifetime - Self.refreshMargin : lifetime / 2
        logger.debug("FCM access token issued", metadata: ["fcm.expires_in": "\(lifetime)"])
        return AccessToken(
            authorization: "Bearer " + token.access_token,
            refreshAt: issuedAt.addingTimeInterval(reuse),
            generation: generation
        )
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
