public import Foundation

/// A notification rendered for one platform: the body and the push-service headers.
///
/// For ``Platform/fcm`` the body is the JSON of an FCM v1 `message` object without its
/// `token`, which the FCM provider adds per device. For the others it is sent as it is.
public struct PlatformPayload: Sendable, Hashable, Codable {
    public struct Header: Sendable, Hashable, Codable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public var platform: Platform
    public var body: Data
    public var headers: [Header]

    public init(platform: Platform, body: Data, headers: [Header] = []) {
        self.platform = platform
        self.body = body
        self.headers = headers
    }
}
