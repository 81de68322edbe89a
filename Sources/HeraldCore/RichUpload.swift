/// Rich content as `POST /api/rich` accepted it: `{"id": "1364025482", "type": "image/png", "size": 1234}`.
/// The server encodes it; the client SDK decodes it.
public struct RichUpload: Sendable, Hashable, Codable {
    /// The content's id, a decimal number, for `POST /api/notifications/rich` and
    /// `GET /api/notifications/{id}`.
    public var id: String
    /// The media type it was uploaded with (without parameters).
    public var type: String
    /// Its size in bytes.
    public var size: Int

    public init(id: String, type: String, size: Int) {
        self.id = id
        self.type = type
        self.size = size
    }
}
