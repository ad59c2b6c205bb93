#pragma once
constexpr double kOffset = 0.5;
