import Foundation
import HeraldCore

/// A `multipart/mixed` body split into its parts (RFC 2046), for batch sends.
struct MultipartBody {
    struct Part {
        var headers: [String: String]
        var body: Data

        /// The `name` of the part's `Content-Disposition`.
        var name: String? {
            guard let disposition = headers["content-disposition"] else { return nil }
            for item in disposition.split(separator: ";") {
                let pair = item.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces() }
                if pair.count == 2, pair[0].lowercased() == "name" {
                    return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                }
            }
            return nil
        }
    }

    var parts: [Part]

    init(contentType: String?, body: Data) throws {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/") else {
            throw HeraldError.badRequest("a batch send is multipart/mixed with a boundary")
        }
        var boundary: String?
        for item in contentType.split(separator: ";").dropFirst() {
            let pair = item.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces() }
            if pair.count == 2, pair[0].lowercased() == "boundary" {
                boundary = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        guard let boundary, !boundary.isEmpty else {
            throw HeraldError.badRequest("the multipart Content-Type has no boundary")
        }
        let delimiter = Data("--\(boundary)".utf8)
        var parts: [Part] = []
        var chunks: [Data] = []
        var searchStart = body.startIndex
        var previous: Range<Data.Index>?
        while let range = body.range(of: delimiter, in: searchStart..<body.endIndex) {
            if let previous { chunks.append(body[previous.upperBound..<range.lowerBound]) }
            previous = range
            searchStart = range.upperBound
        }
        for chunk in chunks {
            var part = Data(chunk)
            // Each part starts after the delimiter's line break and ends before the next one's.
            if part.starts(with: Data("\r\n".utf8)) { part.removeFirst(2) } else if part.first == UInt8(ascii: "\n") { part.removeFirst() }
            if part.suffix(2) == Data("\r\n".utf8) { part.removeLast(2) } else if part.last == UInt8(ascii: "\n") { part.removeLast() }
            let separator = part.range(of: Data("\r\n\r\n".utf8)) ?? part.range(of: Data("\n\n".utf8))
            guard let separator else {
                parts.append(Part(headers: [:], body: part))
                continue
            }
            let headerText = String(decoding: part[part.startIndex..<separator.lowerBound], as: UTF8.self)
            var headers: [String: String] = [:]
            for line in headerText.split(whereSeparator: { $0 == "\r\n" || $0 == "\n" }) {
                let pair = line.split(separator: ":", maxSplits: 1)
                if pair.count == 2 {
                    headers[pair[0].trimmingSpaces().lowercased()] = pair[1].trimmingSpaces()
                }
            }
            parts.append(Part(headers: headers, body: Data(part[separator.upperBound...])))
        }
        guard !parts.isEmpty else { throw HeraldError.badRequest("the multipart body has no parts for its boundary") }
        self.parts = parts
    }

    func part(named name: String) -> Part? {
        parts.first { $0.name?.lowercased() == name }
    }
}
