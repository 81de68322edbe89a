package import Foundation
import Logging
import NIOCore
package import _CryptoExtras

/// OAuth2 access tokens for the FCM API, from a service account (RFC 7523 JWT bearer grant),
/// cached and shared as ``AccessTokenSource`` does for every push service.
typealias FCMAccessTokenSource = AccessTokenSource<FCMAccessTokenRequest>

/// One FCM token exchange: an RS256 JWT assertion signed with the service account's key,
/// posted to its `token_uri`.
package struct FCMAccessTokenRequest: AccessTokenRequest {
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    package static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    let account: FCMServiceAccount
    let key: _RSA.Signing.PrivateKey
    let tokenURI: String
    let route: AccessTokenRoute
    let timeout: TimeAmount
    let logger: Logger

    var serviceName: String { "FCM" }

    func requestToken(issuedAt: Date) async throws -> IssuedAccessToken {
        let assertion: String
        do {
            assertion = try Self.assertion(account: account, key: key, tokenURI: tokenURI, issuedAt: issuedAt)
        } catch {
            throw AccessTokenFailure(error: .signingFailed("the FCM assertion could not be signed"), transient: false)
        }
        return try await exchangeForm(
            [("grant_type", Self.grantType), ("assertion", assertion)],
            tokenURI: tokenURI,
            route: route,
            timeout: timeout,
            defaultLifetime: 3600,
            logger: logger
        )
    }

    /// The signed JWT that a service account exchanges for an access token at `tokenURI`
    /// (its `aud`), valid for an hour from `issuedAt`. `herald bench` signs one to measure the
    /// FCM emulator's ceiling with h2load.
    package static func assertion(
        account: FCMServiceAccount, key: _RSA.Signing.PrivateKey, tokenURI: String, issuedAt: Date
    ) throws -> String {
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

        let iat = Int(issuedAt.timeIntervalSince1970.rounded(.down))
        return try JSONWebToken.rs256(
            header: Header(kid: account.privateKeyID),
            claims: Claims(iss: account.clientEmail, scope: Self.scope, aud: tokenURI, iat: iat, exp: iat + 3600),
            key: key
        )
    }
}

extension AccessTokenSource where Request == FCMAccessTokenRequest {
    static var scope: String { FCMAccessTokenRequest.scope }
    static var grantType: String { FCMAccessTokenRequest.grantType }

    convenience init(
        account: FCMServiceAccount,
        key: _RSA.Signing.PrivateKey,
        tokenURI: String,
        route: AccessTokenRoute,
        timeout: TimeAmount,
        now: @escaping @Sendable () -> Date,
        logger: Logger,
        exchanged: @escaping @Sendable (AccessTokenFailure?) -> Void = { _ in }
    ) {
        self.init(
            request: FCMAccessTokenRequest(
                account: account, key: key, tokenURI: tokenURI, route: route, timeout: timeout, logger: logger),
            now: now,
            exchanged: exchanged
        )
    }
}
