public import Foundation

/// One event for an app's backend, as Standard Webhooks posts it: the body
/// `{"type": …, "timestamp": …, "data": {…}}` under the event's id (`webhook-id`).
///
/// An event's id is made from what caused it (a finished notification's event from the
/// notification's id), so an event recorded twice (by two nodes, or again after a crash) is
/// kept once per endpoint.
public struct WebhookEvent: Sendable, Hashable {
    /// The `webhook-id`: the same for every attempt and every endpoint.
    public var id: String
    public var type: WebhookEventType
    public var timestamp: Date
    public var data: JSONValue

    public init(id: String, type: WebhookEventType, timestamp: Date, data: JSONValue) {
        self.id = id
        self.type = type
        self.timestamp = timestamp
        self.data = data
    }

    /// The body posted: compact JSON with sorted keys, `timestamp` in RFC 3339 with
    /// milliseconds.
    public var body: String {
        let document: JSONValue = .object([
            ("type", .string(type.rawValue)),
            ("timestamp", .string(Self.timestampText(timestamp))),
            ("data", data),
        ])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // A JSONValue always encodes.
        return String(decoding: try! encoder.encode(document), as: UTF8.self)
    }

    static func timestampText(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
