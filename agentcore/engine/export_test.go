package engine

// The exchange log's bounds, for its tests (exchanges.go).
const (
	ExchangeQueue = exchangeQueue
	MaxBatch      = maxBatch
	BatchWindow   = batchWindow
)
