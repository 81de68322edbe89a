import Foundation
public import HeraldCore

/// A push subscription as a browser hands it to a web app (`PushSubscription.toJSON()`):
/// the endpoint to POST to and the keys to encrypt for.
///
/// Encodes as `{"endpoint": …, "keys": {"p256dh": …, "auth": …}}`.
public struct WebPushSubscription: Sendable, Hashable, Codable {
    /// `https://HOST:PORT/push/<id>`.
    public var endpoint: String
    public var keys: WebPushKeys

    public init(endpoint: String, keys: WebPushKeys) {
        self.endpoint = endpoint
        self.keys = keys
    }

    /// The user agent's P-256 public key, uncompressed, base64url.
    public var p256dh: String { keys.p256dh }
    /// The 16-byte authentication secret, base64url.
    public var auth: String { keys.auth }
    /// The last path segment of the endpoint: what the emulator's control API calls the device.
    public var id: String { WebPushSubscription.id(fromEndpoint: endpoint) }

    /// The subscription id in an endpoint (`…/push/<id>`), or `endpoint` itself if it is a bare id.
    static func id(fromEndpoint endpoint: String) -> String {
        guard let range = endpoint.range(of: "/push/", options: .backwards) else { return endpoint }
        return String(endpoint[range.upperBound...])
    }
}
