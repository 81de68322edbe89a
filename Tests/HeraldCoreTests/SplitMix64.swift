/// A small seeded generator (SplitMix64) so that property tests are reproducible: a
/// failure names its seed, and the same seed gives the same cases on every run.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound`, independent of the standard library's mapping.
    mutating func int(below bound: Int) -> Int {
        precondition(bound > 0)
        return Int(next() % UInt64(bound))
    }

    /// True with probability `1/n`.
    mutating func oneIn(_ n: Int) -> Bool { int(below: n) == 0 }

    mutating func pick<T>(_ items: [T]) -> T { items[int(below: items.count)] }
}
