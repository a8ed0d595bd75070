package inspect

// Cached is how many segments dec holds (for the test of its bound).
func (dec *Decoder) Cached() int { return len(dec.segs) }
