import Foundation
public import HeraldCore

/// What a device received, without the notification's id that Herald adds for receipts
/// (``Receipt/payloadKey``): for tests that compare a payload with what was sent, while tests of
/// their own check the id itself.
public enum ReceiptIDs {
    /// `payload` without its `"herald.id"` member (and without a `data` object that only held
    /// it, as Herald adds one to an FCM message that had none).
    public static func removed(from payload: String) -> String {
        let key = #""\#(Receipt.payloadKey)":"[^"]*""#
        var text = payload
        for pattern in [key + ",", "," + key, key, #""data":\{\},"#, #","data":\{\}"#, #""data":\{\}"#] {
            text = text.replacingOccurrences(of: pattern, with: "", options: .regularExpression)
        }
        return text
    }

    /// The notification id `payload` carries, if any.
    public static func id(in payload: String) -> String? {
        Receipt.notificationID(inPayload: payload.utf8)
    }
}

extension ReceiptIDs {
    /// An FCM message's `data` without the notification's id.
    public static func removed(from data: [String: String]?) -> [String: String]? {
        data?.filter { $0.key != Receipt.payloadKey }
    }

    /// A JSON object without the notification's id among its members.
    public static func removed(from object: JSONValue?) -> JSONValue? {
        guard case .object(let members)? = object else { return object }
        return .object(members.filter { $0.key != Receipt.payloadKey })
    }
}
