public import Foundation
public import HeraldCore
public import NIOSSL

/// How ``FCMProvider`` reaches Firebase Cloud Messaging (HTTP v1) and signs in to it.
public struct FCMConfiguration: Sendable {
    /// The service account whose key signs the OAuth2 assertion.
    public var serviceAccount: FCMServiceAccount
    /// FCM's own base URL.
    public static let defaultEndpoint = "https://fcm.googleapis.com"
    /// Base URL of the FCM API; set it to reach a proxy or an emulator.
    public var endpoint: String = FCMConfiguration.defaultEndpoint
    /// Overrides the service account's `token_uri`.
    public var tokenURI: String? = nil
    /// Certificates to trust for TLS; `nil` uses the system roots.
    public var trustRoots: [NIOSSLCertificate]? = nil
    /// Time allowed for one request (a send or a token exchange), from queueing to the end of
    /// the response; also bounds setting a connection up (at most ``connectTimeout``). A refused
    /// or failed connection to FCM fails the sends waiting for it at once with
    /// ``DeliveryOutcome/pnsUnreachable``, and sends fail the same way, without waiting, during a
    /// short backoff (100 ms, doubling up to 5 s) before the next attempt. A token endpoint on
    /// another origin is reached over AsyncHTTPClient, which retries a refused connection until
    /// this long has passed.
    public var timeout: Duration = .seconds(30)
    /// Time allowed for setting up one connection, TCP and TLS; ``timeout`` caps it too.
    public var connectTimeout: Duration = .seconds(10)
    /// Number of HTTP/2 connections that sends are spread over, round-robin.
    public var connections: Int = 2
    /// The wall clock that access-token expiry and JWT `iat` are read from.
    public var now: @Sendable () -> Date = Date.init

    public init(serviceAccount: FCMServiceAccount) {
        self.serviceAccount = serviceAccount
    }

    /// The token endpoint in effect.
    public var effectiveTokenURI: String { tokenURI ?? serviceAccount.tokenURI }

    func validate() throws(PushProviderError) {
        guard connections >= 1 else { throw .invalidConfiguration("FCM connections must be at least 1") }
        guard timeout > .zero else { throw .invalidConfiguration("FCM timeout must be positive") }
        try validateBaseURL(endpoint, name: "FCM endpoint")
        try validateBaseURL(effectiveTokenURI, name: "FCM token URI")
        guard serviceAccount.projectID.utf8.allSatisfy({ $0 > 32 && $0 < 127 && $0 != UInt8(ascii: "/") }) else {
            throw .invalidConfiguration("FCM project id '\(serviceAccount.projectID)' is not valid")
        }
    }
}

extension FCMConfiguration: SecretRedacting {
    /// The fields; the service account shows itself without its private key.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "serviceAccount": serviceAccount, "endpoint": endpoint, "tokenURI": tokenURI as Any,
                "timeout": timeout, "connectTimeout": connectTimeout, "connections": connections,
            ])
    }
}
