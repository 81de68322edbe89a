/// Tags: the labels a registration answers to, and the rules a tag must follow.
///
/// A tag is 1 to ``maxLength`` characters of ASCII letters, digits and `_ @ # . : -`, the
/// characters the established cloud notification hub accepts. Two system tags are also
/// allowed: `$InstallationId:{…}` and `$UserId:{…}`, whose value inside the braces may also
/// contain `=`. Tags are case-sensitive: `Sports` and `sports` are different tags.
///
/// ```swift
/// try Tag.validate("follows:bob")          // fine
/// try Tag.validate("$UserId:{alice}")      // fine: a system tag
/// try Tag.validate("breaking news")        // throws: the space at position 8
/// ```
public enum Tag {
    /// The longest tag, in characters.
    public static let maxLength = 120
    /// The most tags one registration or installation may carry.
    public static let maxPerRegistration = 60

    /// The system tags Herald recognises, as the prefix before `{`.
    static let systemTagPrefixes = ["$InstallationId:", "$UserId:"]

    /// Throws a `400` ``HeraldError`` that says what is wrong with `tag`: which character at
    /// which position (0-based, in characters), or that it is empty or too long.
    public static func validate(_ tag: String) throws(HeraldError) {
        if let problem = problem(in: tag) {
            throw .badRequest(problem.message(for: tag, positionBase: 0))
        }
    }

    /// Validates every tag of one registration, and that there are at most
    /// ``maxPerRegistration`` of them. An empty list is fine.
    public static func validate(tags: [String]) throws(HeraldError) {
        if tags.count > maxPerRegistration {
            throw .badRequest(
                "a registration has at most \(maxPerRegistration) tags; \(tags.count) were given"
            )
        }
        for tag in tags { try validate(tag) }
    }

    /// Whether `tag` is a system tag (it starts with `$`), which the hub sets itself.
    public static func isSystemTag(_ tag: String) -> Bool { tag.hasPrefix("$") }

    /// Whether `character` may appear in an ordinary tag.
    static func isTagCharacter(_ character: Character) -> Bool {
        guard let ascii = character.asciiValue else { return false }
        return isTagByte(ascii)
    }

    static func isTagByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "_"), UInt8(ascii: "@"), UInt8(ascii: "#"), UInt8(ascii: "."),
            UInt8(ascii: ":"), UInt8(ascii: "-"):
            true
        default: false
        }
    }

    /// Whether `character` may appear inside the braces of a system tag.
    static func isSystemValueCharacter(_ character: Character) -> Bool {
        character == "=" || isTagCharacter(character)
    }
}

// MARK: - Problems, shared by `Tag.validate` and the tag-expression parser

extension Tag {
    /// What is wrong with a tag, with offsets in characters from the start of the tag.
    ///
    /// The one place tag rules are checked and described: ``Tag/validate(_:)`` reports
    /// positions within the tag, the tag-expression parser reports them within the
    /// expression by passing the tag's own position as `positionBase`.
    struct Problem: Hashable, Sendable {
        enum Kind: Hashable, Sendable {
            case empty
            case tooLong(length: Int)
            /// A character no tag may hold, or not at that place.
            case invalidCharacter(Character, systemValue: Bool)
            /// `$` followed by something other than `InstallationId:{` or `UserId:{`.
            case unknownSystemTag
            /// `$UserId{…}`: the name is known, its ':' is missing.
            case expectedColon
            case expectedOpeningBrace
            case missingClosingBrace
            case emptySystemValue
            case textAfterClosingBrace(Character)
        }

        var kind: Kind
        /// Where the problem is, in characters from the start of the tag.
        var offset: Int

        /// `tag '<tag>' is invalid: <reason>`, with positions shifted by `positionBase`.
        func message(for tag: some StringProtocol, positionBase: Int) -> String {
            "tag '\(Tag.display(tag))' is invalid: \(reason(positionBase: positionBase))"
        }

        func reason(positionBase: Int) -> String {
            let position = positionBase + offset
            switch kind {
            case .empty:
                return "a tag must not be empty"
            case .tooLong(let length):
                return "it is \(length) characters long; a tag has at most \(Tag.maxLength)"
            case .invalidCharacter(let character, let systemValue):
                let allowed =
                    systemValue
                    ? "the value of a system tag uses ASCII letters, digits and _ @ # . : - ="
                    : "tags use ASCII letters, digits and _ @ # . : -"
                return "character \(Tag.describe(character)) at position \(position) is not allowed; \(allowed)"
            case .unknownSystemTag:
                return
                    "'$' at position \(position) may only begin the system tags $InstallationId:{…} and $UserId:{…}"
            case .expectedColon:
                return "expected ':' at position \(position) after the system tag's name"
            case .expectedOpeningBrace:
                return "expected '{' at position \(position) after the system tag's name"
            case .missingClosingBrace:
                return "missing '}' at position \(position) to end the system tag"
            case .emptySystemValue:
                return "the value between '{' and '}' must not be empty (position \(position))"
            case .textAfterClosingBrace(let character):
                return "unexpected character \(Tag.describe(character)) at position \(position) after the closing '}'"
            }
        }
    }

    /// The first problem with `tag`, or `nil` if it is a valid tag.
    static func problem(in tag: some StringProtocol) -> Problem? {
        if tag.isEmpty { return Problem(kind: .empty, offset: 0) }
        let length = tag.count
        if length > maxLength { return Problem(kind: .tooLong(length: length), offset: 0) }

        guard tag.first == "$" else {
            for (offset, character) in tag.enumerated() where !isTagCharacter(character) {
                return Problem(kind: .invalidCharacter(character, systemValue: false), offset: offset)
            }
            return nil
        }
        return systemTagProblem(in: Array(tag))
    }

    private static func systemTagProblem(in characters: [Character]) -> Problem? {
        // `$Name:` then `{value}` and nothing after.
        guard
            let prefix = systemTagPrefixes.first(where: { prefix in
                characters.starts(with: prefix)
            })
        else {
            // A known name without its ':' or '{' says more than "unknown system tag".
            for prefix in systemTagPrefixes {
                let name = prefix.dropLast()  // "$UserId"
                if characters.starts(with: name),
                    characters.count == name.count || characters[name.count] == "{"
                {
                    return Problem(kind: .expectedColon, offset: name.count)
                }
            }
            return Problem(kind: .unknownSystemTag, offset: 0)
        }
        var index = prefix.count
        guard index < characters.count, characters[index] == "{" else {
            return Problem(kind: .expectedOpeningBrace, offset: index)
        }
        index += 1
        let valueStart = index
        while index < characters.count, characters[index] != "}" {
            if !isSystemValueCharacter(characters[index]) {
                return Problem(kind: .invalidCharacter(characters[index], systemValue: true), offset: index)
            }
            index += 1
        }
        if index == characters.count { return Problem(kind: .missingClosingBrace, offset: index) }
        if index == valueStart { return Problem(kind: .emptySystemValue, offset: index) }
        if index + 1 < characters.count {
            return Problem(kind: .textAfterClosingBrace(characters[index + 1]), offset: index + 1)
        }
        return nil
    }

    /// A tag as it may appear in a message: at most 40 characters, control and other
    /// invisible characters spelled as `\u{…}`.
    package static func display(_ tag: some StringProtocol) -> String {
        let limit = 40
        var result = ""
        var count = 0
        for character in tag {
            if count == limit {
                result += "…"
                break
            }
            count += 1
            if isVisible(character) {
                result.append(character)
            } else {
                for scalar in character.unicodeScalars {
                    result += isVisible(Character(scalar)) ? String(scalar) : "\\u{\(hex(scalar))}"
                }
            }
        }
        return result
    }

    /// One character as a message names it: `'%'`, or `U+0020` for an invisible one.
    static func describe(_ character: Character) -> String {
        if isVisible(character), !character.isWhitespace { return "'\(character)'" }
        return character.unicodeScalars.map { "U+\(hex($0, minimumDigits: 4))" }.joined(separator: " ")
    }

    private static func isVisible(_ character: Character) -> Bool {
        character.unicodeScalars.allSatisfy { scalar in
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse,
                .unassigned:
                false
            default: true
            }
        }
    }

    private static func hex(_ scalar: Unicode.Scalar, minimumDigits: Int = 1) -> String {
        let digits = String(scalar.value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, minimumDigits - digits.count)) + digits
    }
}
