// Umbrella header: everything a user of tokenlease needs.
#ifndef TOKENLEASE_TOKENLEASE_H_
#define TOKENLEASE_TOKENLEASE_H_

#include "tokenlease/clock.h"
#include "tokenlease/decision.h"
#include "tokenlease/direct.h"
#include "tokenlease/guard.h"
#include "tokenlease/leased.h"
#include "tokenlease/limiter.h"
#include "tokenlease/metrics.h"
#include "tokenlease/redis.h"
#include "tokenlease/shared_limit.h"
#include "tokenlease/spec.h"

#endif  // TOKENLEASE_TOKENLEASE_H_
