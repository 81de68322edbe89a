public import Foundation

/// A notification that an emulator accepted for a virtual device: an entry in that device's inbox.
public struct ReceivedNotification: Sendable, Hashable, Codable {
    /// APNs: the `apns-id` (the client's, or the one the emulator generated). FCM: the message
    /// name, `projects/{project}/messages/{id}`.
    public var id: String
    /// The device token (APNs: lowercase hex) or, for FCM topic messages, `/topics/{topic}`.
    public var token: String
    /// APNs: the request's `apns-*` headers, names lowercased. FCM: empty.
    public var headers: [String: String]
    /// The payload as UTF-8 JSON: the APNs request body, or the FCM `message` object.
    public var payload: String
    public var receivedAt: Date

    public init(id: String, token: String, headers: [String: String], payload: String, receivedAt: Date) {
        self.id = id
        self.token = token
        self.headers = headers
        self.payload = payload
        self.receivedAt = receivedAt
    }
}
