import Foundation
import HeraldCore
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Random templates and random property values, rendered and read back by Foundation's
/// parsers: the documents are always valid, and every value is what an evaluator written
/// apart from the template code expects.
@Suite("Notification templates: properties")
struct NotificationTemplatePropertyTests {
    static let seeds: [UInt64] = [1, 2, 3, 42, 2024, 0xC0FFEE, 0xDEAD_BEEF]

    @Test(arguments: seeds)
    func randomValuesRenderValidJSON(seed: UInt64) throws {
        var generator = TemplateGenerator(seed: seed)
        for _ in 0..<150 {
            let fields = (0..<4).map { _ in generator.value() }
            let properties = generator.properties()
            var body = "{"
            for (index, field) in fields.enumerated() {
                let encoded = String(decoding: try JSONEncoder().encode(field.source), as: UTF8.self)
                body += (index == 0 ? "" : ", ") + "\"f\(index)\": " + encoded
            }
            body += ", \"n\": [1, {\"k\": null}]}"
            let template = try NotificationTemplate(body: body)
            let rendered = template.render(properties)

            let object = try JSONSerialization.jsonObject(with: Data(rendered.utf8))
            let parsed = try #require(object as? [String: Any], "seed \(seed): \(rendered)")
            for (index, field) in fields.enumerated() {
                let value = parsed["f\(index)"]
                switch field.expected(properties, inJSON: true) {
                case .string(let expected):
                    #expect(value as? String == expected, "seed \(seed): \(field.source) with \(properties)")
                case .number(let expected):
                    #expect(!(value is String), "seed \(seed): \(field.source) with \(properties)")
                    #expect(
                        rendered.contains("\"f\(index)\": \(expected)"),
                        "seed \(seed): \(field.source) with \(properties)"
                    )
                }
            }
            #expect(parsed["n"] != nil)
        }
    }

    @Test(arguments: seeds)
    func randomValuesRenderWellFormedXML(seed: UInt64) throws {
        var generator = TemplateGenerator(seed: seed)
        for _ in 0..<150 {
            let text = generator.value()
            let attribute = generator.value()
            let properties = generator.properties()
            var xml = XMLWriter()
            try xml.start("toast", attributes: [("launch", attribute.source)])
            try xml.start("text", attributes: [("id", "1")])
            try xml.text(text.source)
            xml.end()
            xml.end()
            let template = try NotificationTemplate(body: xml.output)
            let rendered = template.render(properties)

            let document = try XMLDocumentSummary(rendered)
            let expectedText = text.expected(properties, inJSON: false).text
            // The summary leaves out text that is only whitespace.
            let expectedTexts = expectedText.allSatisfy(\.isWhitespace) ? [] : [expectedText]
            #expect(document.texts == expectedTexts, "seed \(seed): \(rendered)")
            #expect(
                document.attributes["launch"] == attribute.expected(properties, inJSON: false).text,
                "seed \(seed): \(rendered)"
            )
        }
    }

    /// Values made of syntax characters: each is refused with a message or renders a valid
    /// document; none crashes.
    @Test(arguments: seeds)
    func arbitraryValuesAreRefusedOrRenderValidDocuments(seed: UInt64) throws {
        var generator = SplitMix64(seed: seed)
        let alphabet = ["$", "%", ".", "#", "(", ")", "{", "}", "'", "\"", "+", ",", " ", "a", "B", "_", "1", "<", "&", "\\", "é"]
        var accepted = 0
        for _ in 0..<400 {
            let value = (0..<generator.int(below: 16)).map { _ in generator.pick(alphabet) }.joined()
            let properties = ["a": "x\"<&>'", "b": "12", "B1": "é\n"]
            let encoded = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
            do {
                let template = try NotificationTemplate(body: "{\"v\": " + encoded + "}")
                _ = try JSONSerialization.jsonObject(with: Data(template.render(properties).utf8))
                accepted += 1
            } catch let error as HeraldError {
                #expect(error.code == .badRequest)
                #expect(error.message.hasPrefix("The template has an invalid expression"), "\(error.message)")
            }
            var xml = XMLWriter()
            try xml.element("a", attributes: [("v", value)], text: value)
            do {
                let template = try NotificationTemplate(body: xml.output)
                _ = try XMLDocumentSummary(template.render(properties))
            } catch let error as HeraldError {
                #expect(error.message.hasPrefix("The template has an invalid expression"), "\(error.message)")
            }
        }
        #expect(accepted > 0)
    }

    @Test func pathologicalBracesStayLinear() throws {
        // Many unclosed blocks and literals: each `{` is tried as a block once.
        let value = String(repeating: "{'a' + \"b", count: 2000) + String(repeating: "{$(a) + ", count: 2000)
        let encoded = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
        let template = try NotificationTemplate(body: "{\"v\": " + encoded + "}")
        let rendered = template.render(["a": "1"])
        _ = try JSONSerialization.jsonObject(with: Data(rendered.utf8))
    }
}

/// A template value built from pieces whose rendering the generator knows.
struct GeneratedValue {
    enum Piece {
        case text(String)
        case expression(sigil: Character, name: String, length: Int?)
        /// Operands: `.text` literals and expressions.
        case block([Piece], source: String)
    }

    enum Expected {
        case string(String)
        case number(String)

        var text: String {
            switch self {
            case .string(let text), .number(let text): text
            }
        }
    }

    var pieces: [Piece]
    var source: String

    /// What the value renders to, by a reference evaluator.
    func expected(_ properties: [String: String], inJSON: Bool) -> Expected {
        if inJSON, pieces.count == 1, case .expression("#", let name, nil) = pieces[0] {
            let value = Self.lookup(name, properties)
            return Self.isNumber(value) ? .number(value) : .string(value)
        }
        let text = pieces.map { Self.evaluate($0, properties) }.joined()
        return .string(inJSON ? text : Self.xmlSafe(text))
    }

    static func evaluate(_ piece: Piece, _ properties: [String: String]) -> String {
        switch piece {
        case .text(let text): return text
        case .block(let operands, _): return operands.map { evaluate($0, properties) }.joined()
        case .expression(let sigil, let name, let length):
            let value = lookup(name, properties)
            let characters = Array(value)
            switch (sigil, length) {
            case ("%", _):
                return value.addingPercentEncoding(
                    withAllowedCharacters: CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
                )!
            case (".", let n?):
                if characters.count <= n { return value }
                return n > 3 ? String(characters[..<(n - 3)]) + "..." : String(characters[..<n])
            case (_, let n?):
                return String(characters.prefix(n))
            default:
                return value
            }
        }
    }

    /// Case-insensitive; the generator never gives two spellings of one name.
    static func lookup(_ name: String, _ properties: [String: String]) -> String {
        properties.first { $0.key.lowercased() == name.lowercased() }?.value ?? ""
    }

    static func isNumber(_ value: String) -> Bool {
        value.wholeMatch(of: /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/) != nil && Double(value)!.isFinite
    }

    /// Characters XML 1.0 cannot carry become U+FFFD.
    static func xmlSafe(_ text: String) -> String {
        var output = ""
        for scalar in text.unicodeScalars {
            let allowed =
                scalar == "\t" || scalar == "\n" || scalar == "\r"
                || (scalar.value >= 0x20 && scalar.value != 0xFFFE && scalar.value != 0xFFFF)
            output.unicodeScalars.append(allowed ? scalar : "\u{FFFD}")
        }
        return output
    }
}

struct TemplateGenerator {
    var random: SplitMix64
    static let names = ["message", "title", "count", "user_name", "X1"]
    /// Template text: anything but `{` and `(`, which could join neighbouring pieces into
    /// syntax; a sigil at its end is then followed by a piece that never starts with `(`.
    static let textAlphabet = [
        "a", "Z", "0", " ", "$", "%", ".", "#", ")", "}", "'", "\"", "+", ",", "\\", "/", "<", ">", "&", ";",
        "\n", "\t", "\r", "é", "東", "😀", "]]>", "\u{2028}",
    ]
    /// Literal text inside a block: anything, quotes included (doubled by the generator).
    static let literalAlphabet = textAlphabet + ["{", "(", "$(", "{'", "''"]
    /// Property values: anything, including what JSON and XML must escape or cannot carry.
    static let valueAlphabet = textAlphabet + ["{", "(", "\u{0}", "\u{1F}", "\u{7F}", "\u{FFFE}", "👨‍👩‍👧", "\r\n"]

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    mutating func value() -> GeneratedValue {
        if random.oneIn(6) {
            // A whole value that is exactly `#(name)`.
            let name = spelled(random.pick(Self.names))
            return GeneratedValue(pieces: [.expression(sigil: "#", name: name, length: nil)], source: "#(\(name))")
        }
        var pieces: [GeneratedValue.Piece] = []
        var source = ""
        for _ in 0..<random.int(below: 5) {
            switch random.int(below: 3) {
            case 0:
                let text = (0..<(1 + random.int(below: 6))).map { _ in random.pick(Self.textAlphabet) }.joined()
                pieces.append(.text(text))
                source += text
            case 1:
                let (piece, text) = expression()
                pieces.append(piece)
                source += text
            default:
                var operands: [GeneratedValue.Piece] = []
                var texts: [String] = []
                for _ in 0..<(1 + random.int(below: 4)) {
                    if random.oneIn(2) {
                        let (piece, text) = expression()
                        // `#` inside a block is a plain value.
                        if case .expression("#", let name, nil) = piece {
                            operands.append(.expression(sigil: "$", name: name, length: nil))
                        } else {
                            operands.append(piece)
                        }
                        texts.append(text)
                    } else {
                        let literal = (0..<random.int(below: 5)).map { _ in random.pick(Self.literalAlphabet) }.joined()
                        let quote = random.oneIn(2) ? "'" : "\""
                        operands.append(.text(literal))
                        texts.append(quote + literal.replacingOccurrences(of: quote, with: quote + quote) + quote)
                    }
                }
                let text = "{" + space() + texts.joined(separator: space() + "+" + space()) + space() + "}"
                pieces.append(.block(operands, source: text))
                source += text
            }
        }
        return GeneratedValue(pieces: pieces, source: source)
    }

    mutating func expression() -> (GeneratedValue.Piece, String) {
        let name = spelled(random.pick(Self.names))
        let sigil = random.pick(["$", "$", ".", "%", "#"] as [Character])
        var length: Int?
        if sigil == "." || (sigil == "$" && random.oneIn(2)) { length = random.int(below: 12) }
        let lengthText = length.map { "," + space() + String($0) + space() } ?? ""
        return (
            .expression(sigil: sigil, name: name, length: length),
            String(sigil) + "(" + space() + name + space() + lengthText + ")"
        )
    }

    mutating func properties() -> [String: String] {
        var properties: [String: String] = [:]
        for name in Self.names where !random.oneIn(4) {
            if random.oneIn(3) {
                properties[spelled(name)] = random.pick(["0", "7", "-12.5e3", "007", "1e999", "3.", "42"])
            } else {
                properties[spelled(name)] = (0..<random.int(below: 14)).map { _ in random.pick(Self.valueAlphabet) }
                    .joined()
            }
        }
        return properties
    }

    /// `name` in a random case.
    mutating func spelled(_ name: String) -> String {
        String(name.map { random.oneIn(2) ? Character($0.uppercased()) : Character($0.lowercased()) })
    }

    mutating func space() -> String {
        random.pick(["", "", " ", "  ", "\t"])
    }
}
