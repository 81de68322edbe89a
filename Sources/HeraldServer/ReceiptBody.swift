import Foundation
import HeraldCore

/// The notifications a receipt confirms, as the hub REST API and the app backend take them:
/// `"notificationId": "<id>"` or `"notificationIds": ["<id>", …]` (names matched
/// case-insensitively, as the app backend's other members are).
enum ReceiptBody {
    static func notificationIDs(in body: JSONValue) throws(HeraldError) -> [String] {
        guard case .object = body else { throw usage }
        switch (body.member("notificationId"), body.member("notificationIds")) {
        case (let single?, nil):
            guard let id = single.stringValue else { throw HeraldError.badRequest("notificationId is a string: the id the payload carries as herald.id") }
            return [id]
        case (nil, let list?):
            guard case .array(let values) = list else { throw HeraldError.badRequest("notificationIds is an array of strings") }
            var ids: [String] = []
            for value in values {
                guard let id = value.stringValue else { throw HeraldError.badRequest("notificationIds is an array of strings") }
                ids.append(id)
            }
            return ids
        case (.some, .some):
            throw HeraldError.badRequest("send notificationId or notificationIds, not both")
        case (nil, nil):
            throw usage
        }
    }

    /// A string member of the body, or `nil` if absent; `400` if it is not a non-empty string.
    static func string(_ name: String, in body: JSONValue) throws(HeraldError) -> String? {
        guard let value = body.member(name) else { return nil }
        guard let text = value.stringValue, !text.isEmpty else { throw HeraldError.badRequest("\(name) is a non-empty string") }
        return text
    }

    private static let usage = HeraldError.badRequest(
        #"send {"notificationId": "<the payload's herald.id>"} (or "notificationIds": [...]) with the device that received it"#
    )
}
