/// A secure payload as `GET /api/notifications/{id}` returns it to its recipient:
/// `{"Id": "…", "Payload": <the JSON the sender posted>, "Read": false}`. The server
/// encodes it; the client SDK decodes it.
public struct SecurePayload: Sendable, Hashable, Codable {
    /// The id the device received in the silent notification.
    public var id: String
    /// The JSON value the sender posted.
    public var payload: JSONValue
    /// Whether the payload had been fetched before this fetch.
    public var read: Bool

    public init(id: String, payload: JSONValue, read: Bool) {
        self.id = id
        self.payload = payload
        self.read = read
    }

    private enum CodingKeys: String, CodingKey {
        case id = "Id"
        case payload = "Payload"
        case read = "Read"
    }
}
