import Crypto
import Foundation
import HeraldCore
import HeraldTLS
import NIOSSL
import Synchronization

/// How APNs authenticates a request, shared by the APNs endpoint and the broadcast management
/// endpoint: a provider token (ES256 JWT) in `authorization`, or else the TLS client certificate
/// of the connection.
final class APNsAuthenticator: Sendable {
    /// A provider token that was accepted once. Only its age is checked again.
    struct VerifiedToken {
        var keyID: String
        var teamID: String
        var issuedAt: Int
    }

    /// Per connection: the last authorization header and what it verified to, so that a
    /// connection that reuses its token (the normal case) costs one string comparison.
    struct ConnectionState {
        var authorization: String?
        var token: VerifiedToken?
        /// The topic of the connection's client certificate, when it was issued by
        /// ``APNsEmulator/Configuration/clientCertificateAuthority`` and was valid at the handshake.
        var certificateTopic: String?
    }

    /// How a request was authenticated.
    enum Method {
        case providerToken
        /// A client certificate for this app (its subject `UID`; empty when it names none).
        case certificate(topic: String)
    }

    struct Failure: Error {
        var status: Int
        var reason: APNsReason
    }

    private struct ProviderTokens {
        /// Accepted JWTs (the string after `bearer `).
        var accepted: [String: VerifiedToken] = [:]
        /// When each key last presented a new token.
        var lastNewToken: [String: Date] = [:]
    }

    private struct JWTHeader: Decodable {
        var alg: String
        var kid: String
    }

    private struct JWTClaims: Decodable {
        var iss: String
        var iat: Int
    }

    private let configuration: APNsEmulator.Configuration
    private let keys: [String: APNsEmulator.SigningKey]
    private let tokens = Mutex(ProviderTokens())

    init(configuration: APNsEmulator.Configuration) {
        self.configuration = configuration
        self.keys = Dictionary(configuration.signingKeys.map { ($0.keyID, $0) }, uniquingKeysWith: { _, last in last })
    }

    func makeConnectionState(clientCertificate: NIOSSLCertificate?) -> ConnectionState {
        var state = ConnectionState()
        if let clientCertificate, let authority = configuration.clientCertificateAuthority,
            let verified = ClientCertificate.verified(clientCertificate, issuedBy: authority, now: configuration.now())
        {
            // A certificate without a UID names no app: it authorizes no topic.
            state.certificateTopic = verified.topic ?? ""
        }
        return state
    }

    /// The provider token of `authorization` if there is one, else the connection's certificate;
    /// 403 `MissingProviderToken` without either.
    @inline(__always)
    func authenticate(_ authorization: String?, state: inout ConnectionState, now: Date) -> Result<Method, Failure> {
        if let authorization {
            if let failure = checkProviderToken(authorization, state: &state, now: now) {
                return .failure(failure)
            }
            return .success(.providerToken)
        }
        if let topic = state.certificateTopic {
            return .success(.certificate(topic: topic))
        }
        return .failure(Failure(status: 403, reason: .missingProviderToken))
    }

    /// Checks the request's provider token, reusing the connection's last verification when
    /// the header is the same; `nil` when the token is accepted.
    private func checkProviderToken(_ authorization: String, state: inout ConnectionState, now: Date) -> Failure? {
        let token: VerifiedToken
        if let cached = state.token, state.authorization == authorization {
            token = cached
        } else {
            switch verifyProviderToken(authorization, now: now) {
            case .success(let verified):
                token = verified
                state.authorization = authorization
                state.token = verified
            case .failure(let failure):
                return failure
            }
        }
        let age = now.timeIntervalSince1970 - Double(token.issuedAt)
        if age > configuration.providerTokenLifetime {
            return Failure(status: 403, reason: .expiredProviderToken)
        }
        if age < -60 {
            return Failure(status: 403, reason: .invalidProviderToken)
        }
        return nil
    }

    /// Checks a provider token the first time it is seen: form, key, team, signature, age and
    /// update rate. Accepted tokens are remembered, so each distinct JWT is verified once.
    private func verifyProviderToken(_ authorization: String, now: Date) -> Result<VerifiedToken, Failure> {
        let invalid = Failure(status: 403, reason: .invalidProviderToken)
        let utf8 = authorization.utf8
        guard utf8.count > 7,
            authorization.prefix(7).lowercased() == "bearer "
        else { return .failure(invalid) }
        let jwt = String(authorization.dropFirst(7).trimmingSpaces())

        if let known = tokens.withLock({ $0.accepted[jwt] }) {
            return .success(known)
        }

        guard let parsed = CompactJWT(jwt[...]),
            let header = parsed.decodeHeader(JWTHeader.self), header.alg == "ES256", !header.kid.isEmpty,
            let claims = parsed.decodeClaims(JWTClaims.self)
        else { return .failure(invalid) }
        guard let key = keys[header.kid], key.teamID == claims.iss else {
            return .failure(invalid)
        }
        guard parsed.signature.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: parsed.signature),
            key.publicKey.isValidSignature(signature, for: parsed.signingInput)
        else { return .failure(invalid) }

        let age = now.timeIntervalSince1970 - Double(claims.iat)
        if age > configuration.providerTokenLifetime {
            return .failure(Failure(status: 403, reason: .expiredProviderToken))
        }
        if age < -60 {
            return .failure(invalid)
        }

        let verified = VerifiedToken(keyID: header.kid, teamID: claims.iss, issuedAt: claims.iat)
        let interval = configuration.minimumProviderTokenInterval
        let lifetime = configuration.providerTokenLifetime
        return tokens.withLock { tokens -> Result<VerifiedToken, Failure> in
            if let known = tokens.accepted[jwt] { return .success(known) }
            if let last = tokens.lastNewToken[header.kid], now.timeIntervalSince(last) < interval {
                return .failure(Failure(status: 429, reason: .tooManyProviderTokenUpdates))
            }
            tokens.lastNewToken[header.kid] = now
            if tokens.accepted.count >= 1024 {
                let oldest = now.timeIntervalSince1970 - lifetime
                tokens.accepted = tokens.accepted.filter { Double($0.value.issuedAt) >= oldest }
            }
            tokens.accepted[jwt] = verified
            return .success(verified)
        }
    }
}
