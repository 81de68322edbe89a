import Foundation
import HeraldCore

/// ``XMLWriter`` for documents that must always be written: a character XML 1.0 cannot carry
/// (a control character that came in through JSON, say) is written as U+FFFD instead of
/// failing the whole document.
struct WireXMLWriter {
    private var xml = XMLWriter()

    init() {}

    var data: Data { Data(xml.output.utf8) }

    mutating func start(_ name: String, attributes: [(name: String, value: String)] = []) {
        try? xml.start(name, attributes: attributes.map { ($0.name, Self.representable($0.value)) })
    }

    mutating func end() { xml.end() }

    /// `<name/>`.
    mutating func empty(_ name: String, attributes: [(name: String, value: String)] = []) {
        try? xml.empty(name, attributes: attributes.map { ($0.name, Self.representable($0.value)) })
    }

    /// Escaped character data.
    mutating func text(_ text: String) {
        try? xml.text(Self.representable(text))
    }

    /// `<name>text</name>`.
    mutating func element(_ name: String, _ text: String) {
        try? xml.element(name, text: Self.representable(text))
    }

    /// `<name>text</name>`, or nothing when `text` is `nil`.
    mutating func element(_ name: String, ifPresent text: String?) {
        if let text { element(name, text) }
    }

    /// `<name i:nil="true"/>`: a value that is explicitly absent.
    mutating func nilElement(_ name: String) {
        empty(name, attributes: [("i:nil", "true")])
    }

    /// `<name><![CDATA[text]]></name>`.
    mutating func cdataElement(_ name: String, _ text: String) {
        start(name)
        try? xml.cdata(Self.representable(text))
        end()
    }

    /// `text` with every scalar XML 1.0 cannot carry replaced by U+FFFD.
    static func representable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { !isRepresentable($0) }) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            result.append(isRepresentable(scalar) ? scalar : "\u{FFFD}")
        }
        return String(result)
    }

    private static func isRepresentable(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x9, 0xA, 0xD: true
        case 0..<0x20, 0xFFFE, 0xFFFF: false
        default: true
        }
    }
}
