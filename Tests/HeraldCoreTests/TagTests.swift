import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

@Suite("Tag validation")
struct TagTests {
    static let validTags: [String] = [
        "a", "0", "-", "#", "sports", "follows:bob", "username:alice", "A_b@c#d.e:f-g",
        "Breaking.News", String(repeating: "a", count: 120), "$InstallationId:{abc-123}",
        "$UserId:{alice=1}", "$UserId:{a.b@c#d:e_f-g=}", "$UserId:{=}",
        "$UserId:{" + String(repeating: "u", count: 120 - 10) + "}",
    ]

    @Test(arguments: validTags)
    func acceptsValidTag(_ tag: String) throws {
        try Tag.validate(tag)
    }

    static let invalidTags: [(tag: String, reason: String)] = [
        ("", "a tag must not be empty"),
        (String(repeating: "a", count: 121), "it is 121 characters long; a tag has at most 120"),
        (
            "breaking news",
            "character U+0020 at position 8 is not allowed; tags use ASCII letters, digits and _ @ # . : -"
        ),
        ("café", "character 'é' at position 3 is not allowed; tags use ASCII letters, digits and _ @ # . : -"),
        ("a=b", "character '=' at position 1 is not allowed; tags use ASCII letters, digits and _ @ # . : -"),
        ("a$b", "character '$' at position 1 is not allowed; tags use ASCII letters, digits and _ @ # . : -"),
        ("a{b}", "character '{' at position 1 is not allowed; tags use ASCII letters, digits and _ @ # . : -"),
        ("x,y", "character ',' at position 1 is not allowed; tags use ASCII letters, digits and _ @ # . : -"),
        ("👍", "character '👍' at position 0 is not allowed; tags use ASCII letters, digits and _ @ # . : -"),
        ("a\u{0}", "character U+0000 at position 1 is not allowed; tags use ASCII letters, digits and _ @ # . : -"),
        (
            "tab\there",
            "character U+0009 at position 3 is not allowed; tags use ASCII letters, digits and _ @ # . : -"
        ),
        ("$Foo:{x}", "'$' at position 0 may only begin the system tags $InstallationId:{…} and $UserId:{…}"),
        ("$userid:{x}", "'$' at position 0 may only begin the system tags $InstallationId:{…} and $UserId:{…}"),
        ("$", "'$' at position 0 may only begin the system tags $InstallationId:{…} and $UserId:{…}"),
        ("$UserId{x}", "expected ':' at position 7 after the system tag's name"),
        ("$UserId", "expected ':' at position 7 after the system tag's name"),
        ("$UserId:x", "expected '{' at position 8 after the system tag's name"),
        ("$InstallationId:", "expected '{' at position 16 after the system tag's name"),
        ("$UserId:{x", "missing '}' at position 10 to end the system tag"),
        ("$UserId:{}", "the value between '{' and '}' must not be empty (position 9)"),
        (
            "$UserId:{a b}",
            "character U+0020 at position 10 is not allowed; the value of a system tag uses ASCII letters, digits and _ @ # . : - ="
        ),
        (
            "$UserId:{a{b}",
            "character '{' at position 10 is not allowed; the value of a system tag uses ASCII letters, digits and _ @ # . : - ="
        ),
        ("$UserId:{a}b", "unexpected character 'b' at position 11 after the closing '}'"),
        (
            "$UserId:{" + String(repeating: "u", count: 111) + "}",
            "it is 121 characters long; a tag has at most 120"
        ),
    ]

    @Test(arguments: invalidTags)
    func refusesInvalidTag(_ tag: String, reason: String) {
        expectError(HeraldError.badRequest("tag '\(Self.display(tag))' is invalid: \(reason)")) {
            try Tag.validate(tag)
        }
    }

    /// How messages show a tag: cut after 40 characters, invisible characters escaped.
    static func display(_ tag: String) -> String {
        let cut = tag.count > 40 ? String(tag.prefix(40)) + "…" : tag
        return cut.replacingOccurrences(of: "\t", with: "\\u{9}").replacingOccurrences(of: "\u{0}", with: "\\u{0}")
    }

    @Test func messageShowsLongTagCutAndInvisibleCharactersEscaped() {
        expectError(
            HeraldError.badRequest(
                "tag 'tab\\u{9}here' is invalid: character U+0009 at position 3 is not allowed; tags use ASCII letters, digits and _ @ # . : -")
        ) {
            try Tag.validate("tab\there")
        }
        let long = String(repeating: "x", count: 200)
        expectError(HeraldError.badRequest("tag '\(String(repeating: "x", count: 40))…' is invalid: it is 200 characters long; a tag has at most 120")) {
            try Tag.validate(long)
        }
    }

    @Test func errorIsABadRequest() throws {
        let error = try #require(throws: HeraldError.self) { try Tag.validate("a b") }
        #expect(error.code == .badRequest)
        #expect(error.code.httpStatus == 400)
    }

    @Test func tagListLimits() throws {
        try Tag.validate(tags: [])
        try Tag.validate(tags: (1...Tag.maxPerRegistration).map { "t\($0)" })
        expectError(HeraldError.badRequest("a registration has at most 60 tags; 61 were given")) {
            try Tag.validate(tags: (1...61).map { "t\($0)" })
        }
        expectError(
            HeraldError.badRequest("tag 'b c' is invalid: character U+0020 at position 1 is not allowed; tags use ASCII letters, digits and _ @ # . : -")
        ) {
            try Tag.validate(tags: ["a", "b c", "d e"])
        }
    }

    @Test func limits() {
        #expect(Tag.maxLength == 120)
        #expect(Tag.maxPerRegistration == 60)
    }

    @Test(arguments: [
        ("$InstallationId:{x}", true), ("$UserId:{x}", true), ("$anything", true), ("user", false),
        ("a$", false), ("", false),
    ])
    func systemTags(_ tag: String, isSystem: Bool) {
        #expect(Tag.isSystemTag(tag) == isSystem)
    }

    @Test func tagsAreCaseSensitive() throws {
        let expression = try TagExpression(parsing: "Sports")
        #expect(expression.matches(["Sports"]))
        #expect(!expression.matches(["sports"]))
        #expect(!expression.matches(["SPORTS"]))
    }
}
