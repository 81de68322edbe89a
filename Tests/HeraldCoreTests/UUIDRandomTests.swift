import Foundation
import HeraldCore
import Testing

@Suite("Random UUIDs")
struct UUIDRandomTests {
    /// Every UUID is version 4 of the RFC 4122 variant, no two of many are alike, and every
    /// one of the 122 random bits is both set and clear in some of them (none is stuck).
    @Test func everyRandomBitVariesAndTheVersionIsFour() {
        let uuids = (0..<512).map { _ in UUID.random() }
        #expect(Set(uuids).count == uuids.count)
        var everSet = [UInt8](repeating: 0, count: 16)
        var everClear = [UInt8](repeating: 0, count: 16)
        for uuid in uuids {
            let bytes = withUnsafeBytes(of: uuid.uuid) { Array($0) }
            #expect(bytes[6] >> 4 == 4)
            #expect(bytes[8] >> 6 == 0b10)
            for index in 0..<16 {
                everSet[index] |= bytes[index]
                everClear[index] |= ~bytes[index]
            }
        }
        let fixed: [Int: UInt8] = [6: 0xF0, 8: 0xC0]
        for index in 0..<16 {
            let random = ~(fixed[index] ?? 0)
            #expect(everSet[index] & random == random, "byte \(index)")
            #expect(everClear[index] & random == random, "byte \(index)")
        }
    }
}
