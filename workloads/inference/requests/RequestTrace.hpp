#pragma once
// Reads a request trace: CSV with a header row, or JSON Lines, chosen by extension.
//
// Columns (CSV header names or JSONL keys, case-insensitive), with the layouts they
// cover:
//   arrival  arrival_time | arrival_s | timestamp   seconds, or "YYYY-MM-DD HH:MM:SS.f"
//                                                   (Azure LLM inference trace 2023)
//   prompt   prompt_tokens | input_tokens | contexttokens | prompt_len | input_length
//   output   output_tokens | generatedtokens | output_len | output_length
// Arrival times are made relative to the earliest request; rows are stable-sorted by
// arrival. A malformed row is an InputError naming the file and row.
#include "workloads/inference/requests/Request.hpp"

#include <string>

namespace memwall {

std::vector<Request> read_request_trace(const std::string& path);

} // namespace memwall
