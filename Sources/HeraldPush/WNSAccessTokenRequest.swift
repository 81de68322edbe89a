import Foundation
import Logging
import NIOCore

/// OAuth2 access tokens for WNS, cached and shared as ``AccessTokenSource`` does for every
/// push service.
typealias WNSAccessTokenSource = AccessTokenSource<WNSAccessTokenRequest>

/// One WNS token exchange: the OAuth2 client credentials grant,
/// `grant_type=client_credentials&client_id=…&client_secret=…&scope=notify.windows.com`,
/// answered with `{"access_token", "token_type": "bearer", "expires_in"}`.
struct WNSAccessTokenRequest: AccessTokenRequest {
    static let grantType = "client_credentials"
    /// What WNS tokens last when the answer has no `expires_in` (Microsoft issues them for a day).
    static let defaultLifetime: TimeInterval = 24 * 3600

    let clientID: String
    let clientSecret: String
    let scope: String
    let tokenURI: String
    let pool: HTTPClientPool
    let timeout: TimeAmount
    let logger: Logger

    var serviceName: String { "WNS" }

    /// The form fields sent to the token endpoint.
    static func formFields(clientID: String, clientSecret: String, scope: String) -> [(String, String)] {
        [("grant_type", grantType), ("client_id", clientID), ("client_secret", clientSecret), ("scope", scope)]
    }

    func requestToken(issuedAt: Date) async throws -> IssuedAccessToken {
        try await exchangeForm(
            Self.formFields(clientID: clientID, clientSecret: clientSecret, scope: scope),
            tokenURI: tokenURI,
            route: .pool(pool),
            timeout: timeout,
            defaultLifetime: Self.defaultLifetime,
            logger: logger
        )
    }
}
