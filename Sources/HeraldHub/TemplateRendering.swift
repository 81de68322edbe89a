import HeraldCore
import HeraldPush

/// A template send's properties, prepared once per notification.
struct TemplateProperties: Sendable {
    /// The send's values by name, lowercased (template property names are ASCII); of names
    /// that differ only in case, the one first in code-point order.
    private let byName: [String: String]
    /// The names of the send's properties, lowercased: a device's push variable of one of
    /// these names is overridden by the send, whatever its case.
    private let lowercasedNames: Set<String>
    let templateName: String?
    /// The notification's id, which sets the collapse id of its APNs and Web Push renderings
    /// where the template sets none (``ReplacingCopies``); `nil` for none.
    let notificationID: String?
    /// The notification's id as each rendering carries it for receipts; `nil` for none.
    let receiptID: ReceiptID?

    init(_ send: TemplateSend, notificationID: String? = nil, receiptID: ReceiptID? = nil) {
        var byName: [String: String] = [:]
        var chosenKeys: [String: String] = [:]
        for (key, value) in send.properties {
            let name = Self.asciiLowercased(key)
            if let chosen = chosenKeys[name], chosen.utf8.lexicographicallyPrecedes(key.utf8) { continue }
            chosenKeys[name] = key
            byName[name] = value
        }
        self.byName = byName
        lowercasedNames = Set(send.properties.keys.map { $0.lowercased() })
        templateName = send.templateName
        self.notificationID = notificationID
        self.receiptID = receiptID
    }

    /// How a template's properties, `names` (lowercased), get their values: the send's are
    /// looked up here, once; the others are read from each device's push variables.
    func binding(_ names: [String]) -> PropertyBinding {
        PropertyBinding(
            names: names,
            sendValues: names.map { byName[$0] },
            overridden: names.map { lowercasedNames.contains($0) }
        )
    }

    /// `text` with `A–Z` lowercased.
    static func asciiLowercased(_ text: String) -> String {
        guard text.utf8.contains(where: { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else { return text }
        return String(decoding: text.utf8.map { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
    }
}

/// The values of a compiled template's properties, by number, for one send: the send's
/// properties, and where the send has none a device's push variables (names compared
/// case-insensitively). Looking a value up allocates nothing.
struct PropertyBinding: Sendable {
    /// The properties' names, lowercased.
    let names: [String]
    /// The send's value of each property, if it has one.
    let sendValues: [String?]
    /// Whether the send has a property of each name, so that a device's push variable of
    /// that name is not used (even when the send's value is not one a template can read).
    let overridden: [Bool]

    /// The value of property number `index` for a device with `pushVariables`.
    func value(_ index: Int, pushVariables: [String: String]) -> String? {
        if let value = sendValues[index] { return value }
        guard !pushVariables.isEmpty, !overridden[index] else { return nil }
        return Self.value(named: names[index], in: pushVariables)
    }

    /// The value of the variable named `name` (lowercased ASCII) whatever its case; of several
    /// such variables, the one whose name is first in code-point order.
    static func value(named name: String, in variables: [String: String]) -> String? {
        var chosen: (key: String, value: String)?
        for (key, value) in variables where isNamed(key, name) {
            if let current = chosen, current.key.utf8.lexicographicallyPrecedes(key.utf8) { continue }
            chosen = (key, value)
        }
        return chosen?.value
    }

    /// Whether `key` is `lowercased` but for the case of `A–Z`.
    private static func isNamed(_ key: String, _ lowercased: String) -> Bool {
        guard key.utf8.count == lowercased.utf8.count else { return false }
        return zip(key.utf8, lowercased.utf8).allSatisfy { byte, expected in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 == expected : byte == expected
        }
    }
}

/// One device's notification from its registration's template.
struct TemplateRendering: Sendable {
    /// The registration's template, compiled once per notification for its platform.
    let compiled: CompiledTemplate
    let pushVariables: [String: String]

    /// Renders the body, the headers and (for APNs) the expiry and priority, and checks the
    /// result as a native send of the registration's platform would be checked.
    func notification() -> Result<PushNotification, HeraldError> {
        Result { () throws(HeraldError) in try compiled.notification(pushVariables: pushVariables) }
    }
}
